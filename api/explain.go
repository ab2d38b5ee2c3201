package api

import (
	"context"
	"net/url"

	"haven/monitor"
)

// PathExplain answers `svcmgr explain`: GET ?name=S[&start=1] ->
// Explanation. start=1 explains a start now, as if the service were down
// everywhere.
const PathExplain = "/services/explain"

// Explanation is why a service runs, or does not, where it does, as the
// answering node's decision core sees it (monitor.Explain): every node's
// verdict, the leader, the local monitor and what it waits for.
type Explanation = monitor.Explanation

// Explain asks the daemon why service name stands where it does; with
// start, what a start now would do.
func (c *Client) Explain(ctx context.Context, name string, start bool) (*Explanation, error) {
	q := url.Values{"name": {name}}
	if start {
		q.Set("start", "1")
	}
	var out Explanation
	return &out, c.do(ctx, "GET", PathExplain, q, nil, &out)
}
