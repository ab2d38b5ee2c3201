// Haven web view: applies the live updates the server sends (server-sent
// events) to the page the server rendered. The page is complete without
// it; nothing here builds HTML from data: the fragments come rendered and
// escaped by the server, and are parsed, never run.
'use strict';
(function () {
  const body = document.body;
  const view = body.dataset.view;
  if (!view || !('EventSource' in window)) {
    return;
  }
  const status = document.getElementById('live-status');
  const params = new URLSearchParams({ view: view, after: body.dataset.after || '0' });
  if (body.dataset.name) {
    params.set('name', body.dataset.name);
  }
  const maxRows = 500;

  function setStatus(text, tone) {
    if (status) {
      status.textContent = text;
      status.className = 'live t-' + tone;
    }
  }

  function parse(html) {
    const doc = new DOMParser().parseFromString('<!doctype html><body>' + html, 'text/html');
    return Array.from(doc.body.childNodes);
  }

  // replace swaps the contents of el, keeping the keyboard focus on the
  // same link (the grid is replaced while it is being read).
  function replace(el, html) {
    const active = document.activeElement;
    const key = active && el.contains(active) ? active.getAttribute('href') || active.getAttribute('aria-label') : null;
    el.replaceChildren(...parse(html));
    if (key) {
      const again = Array.from(el.querySelectorAll('[href],[aria-label]')).find(
        (n) => n.getAttribute('href') === key || n.getAttribute('aria-label') === key);
      if (again) {
        again.focus({ preventScroll: true });
      }
    }
  }

  function addEvent(html) {
    const list = document.getElementById('events');
    if (!list) {
      return;
    }
    const doc = new DOMParser().parseFromString('<!doctype html><table><tbody>' + html + '</tbody></table>', 'text/html');
    const row = doc.querySelector('tr');
    if (!row) {
      return;
    }
    row.classList.add('new');
    list.prepend(row);
    while (list.rows.length > maxRows) {
      list.deleteRow(list.rows.length - 1);
    }
  }

  const es = new EventSource('/live?' + params.toString());
  es.addEventListener('open', () => setStatus('live', 'ok'));
  es.addEventListener('error', () => setStatus(es.readyState === EventSource.CLOSED ? 'disconnected: reload the page' : 'reconnecting…', 'warn'));
  es.addEventListener('state', (e) => setStatus(e.data === 'live' ? 'live' : e.data, e.data === 'live' ? 'ok' : 'warn'));
  es.addEventListener('view', (e) => {
    const el = document.getElementById('view');
    if (el) {
      replace(el, e.data);
    }
  });
  es.addEventListener('event', (e) => addEvent(e.data));
})();
