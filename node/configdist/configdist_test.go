package configdist

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
	"haven/node/datadriven"
	"haven/node/vocab"
)

var update = flag.Bool("update", false, "rewrite node/testdata/configdist/*.txt with the outputs (review the diff)")

// TestConfigDistDatadriven runs the files of testdata/configdist: the
// config distribution sub-machine alone (the writes in flight, the edits
// waiting for the peers, the deletions waiting for a stop, the refused
// versions, the peers left over at the merge budget), driven by its own
// inputs. go test ./node/configdist -run TestConfigDistDatadriven -update rewrites
// the expected outputs.
//
// Commands (T a ticket, V a version as COUNTER@ORIGIN):
//
//	order svc=S [remove] [what=W]   a ConfigOp handed out
//	done svc=S                      the end of the first op of S reported
//	await-stop ticket=T svc=S version=V
//	stopped ticket=T
//	await-peers svc=S ticket=T      an edit written here, for the peers
//	forget svc=S ticket=T           that edit answered
//	refuse svc=S version=V
//	refused svc=S version=V
//	leave-over peer=P
//	take peer=P
func TestConfigDistDatadriven(t *testing.T) {
	datadriven.RunDir(t, "../testdata/configdist/*.txt", *update, func(*testing.T) func(*datadriven.Cmd) (string, error) {
		var cd Book
		return func(c *datadriven.Cmd) (string, error) { return configDistStep(&cd, c) }
	})
}

func configDistStep(cd *Book, c *datadriven.Cmd) (string, error) {
	arg := func(key string) string { v, _ := c.Arg(key); return v }
	ticket := func() (vocab.Ticket, error) {
		n, err := strconv.ParseUint(arg("ticket"), 10, 64)
		if err != nil {
			return 0, c.Errorf("ticket: %v", err)
		}
		return vocab.Ticket(n), nil
	}
	version := func() (dataset.Version, error) {
		n, origin, _ := strings.Cut(arg("version"), "@")
		cnt, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return dataset.Version{}, c.Errorf("version: %v", err)
		}
		return dataset.Version{Counter: cnt, Origin: origin}, nil
	}
	var out []string
	svc := arg("svc")
	switch c.Name {
	case "order":
		op := &Op{Svc: svc, What: arg("what")}
		if _, rm := c.Arg("remove"); !rm {
			op.Cfg = &config.ServiceConfig{}
		}
		cd.Order(op)
	case "done":
		op := cd.Done(svc)
		if op == nil {
			out = append(out, "no op of "+svc)
			break
		}
		out = append(out, "took "+opString(op))
	case "await-stop":
		tk, err := ticket()
		if err != nil {
			return "", err
		}
		v, err := version()
		if err != nil {
			return "", err
		}
		cd.AwaitStop(tk, Deletion{Svc: svc, V: v})
	case "stopped":
		tk, err := ticket()
		if err != nil {
			return "", err
		}
		d, ok := cd.Stopped(tk)
		if !ok {
			out = append(out, "no deletion")
			break
		}
		out = append(out, fmt.Sprintf("delete %s at %d@%s", d.Svc, d.V.Counter, d.V.Origin))
	case "await-peers":
		tk, err := ticket()
		if err != nil {
			return "", err
		}
		cd.AwaitPeers(svc, &Edit{Ticket: tk})
	case "forget":
		tk, err := ticket()
		if err != nil {
			return "", err
		}
		for _, e := range cd.PendingOf(svc) {
			if e.Ticket == tk {
				cd.Forget(svc, e)
			}
		}
	case "refuse", "refused":
		v, err := version()
		if err != nil {
			return "", err
		}
		if c.Name == "refuse" {
			cd.Refuse(svc, v)
			break
		}
		out = append(out, fmt.Sprintf("refused before: %v", cd.RefusedBefore(svc, v)))
	case "leave-over":
		cd.LeaveOver(arg("peer"))
	case "take":
		out = append(out, fmt.Sprintf("left over: %v", cd.TakeLeftOver(arg("peer"))))
	default:
		return "", c.Errorf("unknown command")
	}
	var ops, pend, dels, refs, more []string
	for _, op := range cd.ops {
		ops = append(ops, opString(op))
	}
	for _, name := range cd.PendingServices() {
		var tks []string
		for _, e := range cd.PendingOf(name) {
			tks = append(tks, strconv.FormatUint(uint64(e.Ticket), 10))
		}
		pend = append(pend, name+":"+strings.Join(tks, ","))
	}
	for tk, d := range cd.deletes {
		dels = append(dels, fmt.Sprintf("%d:%s", tk, d.Svc))
	}
	for name, v := range cd.refused {
		refs = append(refs, fmt.Sprintf("%s@%d@%s", name, v.Counter, v.Origin))
	}
	for p := range cd.more {
		more = append(more, p)
	}
	for _, l := range [][]string{dels, refs, more} {
		slices.Sort(l)
	}
	var busy []string
	for _, name := range []string{"web", "db"} {
		if cd.Busy(name) {
			busy = append(busy, name)
		}
	}
	out = append(out, fmt.Sprintf("ops=[%s] busy=[%s] pending=[%s] deletes=[%s] refused=[%s] left-over=[%s]",
		strings.Join(ops, " "), strings.Join(busy, " "), strings.Join(pend, " "), strings.Join(dels, " "), strings.Join(refs, " "), strings.Join(more, " ")))
	return strings.Join(out, "\n"), nil
}

func opString(op *Op) string {
	kind := "install"
	if op.Cfg == nil {
		kind = "remove"
	}
	if op.What != "" {
		return fmt.Sprintf("%s(%s %s)", op.Svc, kind, op.What)
	}
	return fmt.Sprintf("%s(%s)", op.Svc, kind)
}
