package persist

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"haven/node/datadriven"
	"haven/node/vocab"
)

var update = flag.Bool("update", false, "rewrite node/testdata/persistence/*.txt with the outputs (review the diff)")

// TestPersistenceDatadriven runs the files of testdata/persistence: the
// persistence sub-machine alone (the numbering of the states, the answers
// and actions held for a write, group commit, the roll back), driven by
// its own inputs, without a core around it. go test ./node/persist
// -run TestPersistenceDatadriven -update rewrites the expected outputs.
//
// Commands:
//
//	ready [persist=LAMPORT] [answers=T,T] [runs=SVC:KIND,…] [nodes=KIND,…] [through]
//	    a Ready of the core, numbered and held (hold); prints what goes out
//	barrier ticket=T from=SEQ
//	written seq=SEQ       the driver wrote the state numbered SEQ
//	failed err=TEXT       the write in flight failed: roll back, release
//	drain                 what the writes released, handed over
func TestPersistenceDatadriven(t *testing.T) {
	datadriven.RunDir(t, "../testdata/persistence/*.txt", *update, func(*testing.T) func(*datadriven.Cmd) (string, error) {
		var p Book
		return func(c *datadriven.Cmd) (string, error) { return persistenceStep(&p, c) }
	})
}

func persistenceStep(p *Book, c *datadriven.Cmd) (string, error) {
	var out []string
	num := func(key string) (uint64, error) {
		v, _ := c.Arg(key)
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, c.Errorf("%s=%q: %v", key, v, err)
		}
		return n, nil
	}
	list := func(key string) []string {
		v, ok := c.Arg(key)
		if !ok || v == "" {
			return nil
		}
		return strings.Split(v, ",")
	}
	switch c.Name {
	case "ready":
		var r vocab.Ready
		if _, ok := c.Arg("persist"); ok {
			l, err := num("persist")
			if err != nil {
				return "", err
			}
			r.Persist = &vocab.State{Lamport: l}
		}
		for _, tk := range list("answers") {
			n, err := strconv.ParseUint(tk, 10, 64)
			if err != nil {
				return "", c.Errorf("answers: %v", err)
			}
			r.Answers = append(r.Answers, vocab.Answer{Ticket: vocab.Ticket(n)})
		}
		for _, run := range list("runs") {
			svc, kind, _ := strings.Cut(run, ":")
			r.Run = append(r.Run, vocab.Action{Service: svc, Kind: kind})
		}
		for _, k := range list("nodes") {
			r.NodeActions = append(r.NodeActions, vocab.NodeAction{Kind: k})
		}
		_, through := c.Arg("through")
		p.Hold(&r, through)
		switch {
		case r.Persist != nil:
			out = append(out, fmt.Sprintf("persist #%d lamport=%d", r.PersistSeq, r.Persist.Lamport))
		case r.PersistSeq != 0:
			out = append(out, fmt.Sprintf("persist #%d waits for the write in flight", r.PersistSeq))
		}
		out = append(out, readyOut(r.Answers, r.Run, r.NodeActions)...)
		for _, a := range r.Ordered {
			out = append(out, fmt.Sprintf("ordered %s %s (held)", a.Service, a.Kind))
		}
	case "barrier":
		tk, err := num("ticket")
		if err != nil {
			return "", err
		}
		from, err := num("from")
		if err != nil {
			return "", err
		}
		p.Barrier(vocab.Ticket(tk), from)
	case "written":
		seq, err := num("seq")
		if err != nil {
			return "", err
		}
		fresh, recovered := p.Written(seq)
		if !fresh {
			out = append(out, "known already")
			break
		}
		if recovered {
			out = append(out, "recovered")
		}
		for range p.Release(p.acked, nil) {
			return "", c.Errorf("a success undid an action")
		}
		if p.GroupDue() {
			out = append(out, "group due: hand out the changes made during the write")
		}
	case "failed":
		msg, _ := c.Arg("err")
		st := p.RollBack(errors.New(msg))
		out = append(out, fmt.Sprintf("back to lamport=%d", st.Lamport))
		for _, h := range p.Release(p.seq, fmt.Errorf("state not saved: %s", msg)) {
			if h.Node != nil {
				out = append(out, "node action not run: "+h.Node.Kind)
				continue
			}
			out = append(out, fmt.Sprintf("aborted %s %s", h.Run.Service, h.Run.Kind))
		}
	case "drain":
		var r vocab.Ready
		p.Drain(&r)
		out = append(out, readyOut(r.Answers, r.Run, r.NodeActions)...)
	default:
		return "", c.Errorf("unknown command")
	}
	errs := "-"
	if p.failing != nil {
		errs = p.failing.Error()
	}
	out = append(out, fmt.Sprintf("seq=%d handed=%d acked=%d held=%d on-disk lamport=%d failing=%s settled=%v",
		p.seq, p.handed, p.acked, len(p.held), p.onDisk.Lamport, errs, p.Settled()))
	return strings.Join(out, "\n"), nil
}

func readyOut(answers []vocab.Answer, runs []vocab.Action, nodes []vocab.NodeAction) []string {
	var out []string
	for _, a := range answers {
		if a.Err != nil {
			out = append(out, fmt.Sprintf("answer %d: %v", a.Ticket, a.Err))
			continue
		}
		out = append(out, fmt.Sprintf("answer %d: ok", a.Ticket))
	}
	for _, a := range runs {
		out = append(out, fmt.Sprintf("run %s %s", a.Service, a.Kind))
	}
	for _, a := range nodes {
		out = append(out, "node action "+a.Kind)
	}
	return out
}
