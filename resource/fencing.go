package resource

import (
	"context"
	"strconv"
)

// fencingKey is the context key of the fencing token.
type fencingKey struct{}

// WithFencingToken returns ctx carrying the fencing token of the action
// or check it runs (the node core's Action and Check FencingToken): the
// app driver gives it to its commands as HAVEN_FENCING_TOKEN. 0 sets
// nothing (the instance never started on this node).
func WithFencingToken(ctx context.Context, token uint64) context.Context {
	if token == 0 {
		return ctx
	}
	return context.WithValue(ctx, fencingKey{}, token)
}

// FencingToken returns the fencing token ctx carries, 0 if none.
func FencingToken(ctx context.Context) uint64 {
	t, _ := ctx.Value(fencingKey{}).(uint64)
	return t
}

// fencingEnv is the HAVEN_FENCING_TOKEN variable for ctx, none without a
// token.
func fencingEnv(ctx context.Context) []string {
	if t := FencingToken(ctx); t != 0 {
		return []string{"HAVEN_FENCING_TOKEN=" + strconv.FormatUint(t, 10)}
	}
	return nil
}
