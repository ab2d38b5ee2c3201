package api

import "context"

// PathRefresh checks the local instance of a service now (POST
// RefreshRequest); the answer comes once the check has ended.
const PathRefresh = "/services/refresh"

// RefreshRequest names the service to check (svcmgr print status -r).
type RefreshRequest struct {
	Name string `json:"name"`
}

// Refresh asks the daemon to check the local instance of a service now
// and returns once the check has ended: a status read next shows it.
func (c *Client) Refresh(ctx context.Context, name string) error {
	return c.do(ctx, "POST", PathRefresh, nil, RefreshRequest{Name: name}, nil)
}
