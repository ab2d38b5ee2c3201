package api

import "context"

// PathPull fetches the images of a service's container resources on each
// of its candidate nodes (POST PullRequest, svcmgr -s S pull); the answer
// comes once every node has answered or given up.
const PathPull = "/services/pull"

// PullRequest names the service.
type PullRequest struct {
	Name string `json:"name"`
}

// PullResponse is what each candidate node of the service did.
type PullResponse struct {
	Nodes []PullNode `json:"nodes"`
}

// PullNode is one node's pulls; Error is set when the node could not be
// asked (down, no answer) or could not read the service's config.
type PullNode struct {
	Node   string      `json:"node"`
	Images []PullImage `json:"images,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// PullImage is one image's pull on a node: Error empty when it is in the
// node's engine storage now.
type PullImage struct {
	RID   string `json:"rid"`
	Image string `json:"image"`
	Error string `json:"error,omitempty"`
}

// Pull asks the daemon to pull the images of service name on each of its
// candidate nodes.
func (c *Client) Pull(ctx context.Context, name string) (PullResponse, error) {
	var out PullResponse
	err := c.do(ctx, "POST", PathPull, nil, PullRequest{Name: name}, &out)
	return out, err
}
