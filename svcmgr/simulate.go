package svcmgr

import (
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
	"haven/cli/whatif"
	"haven/sim"
)

// svcmgr simulate: the live cluster, as the local daemon knows it, replayed
// in the simulation (the same node core, on a fake clock) with the events
// of the command line; nothing is sent to the cluster (docs/operations.md,
// "What if").

// eventList keeps the events in command-line order, whatever their flags.
type eventList struct {
	events []sim.WhatIfEvent
}

// eventFlag is one verb's flag: each occurrence appends an event.
type eventFlag struct {
	verb string
	list *eventList
	set  []string
}

func (f *eventFlag) Set(v string) error {
	e, err := sim.ParseWhatIfEvent(f.verb, v)
	if err != nil {
		return err
	}
	f.list.events = append(f.list.events, e)
	f.set = append(f.set, v)
	return nil
}

func (f *eventFlag) String() string { return strings.Join(f.set, ",") }

// simulateCommand is `svcmgr simulate`.
func simulateCommand() *cli.Command {
	list := &eventList{}
	var flags []cli.Flag
	var verbs []string
	for _, v := range sim.WhatIfVerbs {
		flags = append(flags, &cli.GenericFlag{Name: v.Verb, Value: &eventFlag{verb: v.Verb, list: list},
			Usage: "`" + v.Arg + "`[@+DURATION]: " + v.Help})
		verbs = append(verbs, "--"+v.Verb+" "+v.Arg)
	}
	flags = append(flags,
		&cli.DurationFlag{Name: "for", Value: 60 * time.Second, Usage: "how long to simulate from now (at least until the last event)"},
		&cli.StringFlag{Name: "save", Usage: "write the snapshot of the live cluster to `FILE` (JSON; no secret) and simulate"},
		&cli.StringFlag{Name: "from", Usage: "simulate from a snapshot `FILE` written by --save (no daemon needed)"},
	)
	return &cli.Command{Name: "simulate", Usage: "what if: replay the live cluster in the simulation with events (--kill n1, --switch web:n2, ...) and print what would happen; nothing is sent to the cluster",
		UsageText: "svcmgr simulate [--kill NODE] [--cut NODE] [--freeze NODE|SVC] [--drain NODE] [--stop SVC] [--switch SVC:NODE]\n" +
			"                 [--fail SVC] [--set SVC:KEY=VALUE] [--rollout SVC] ... [EVENT@+10s] [--for 60s] [--save FILE | --from FILE] [--format json]",
		Description: "Events run in command-line order at their times (@+10s: ten seconds after the start).\n" +
			"Events: " + strings.Join(verbs, ", ") + ".\n" + globalsHelp,
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return cliutil.Usage("simulate: unexpected argument %q (events are flags: --kill n1)", c.Args().First())
			}
			if !c.IsSet("for") {
				// a rollout's turns take longer than the default: simulate
				// them all (sim.RolloutSpan)
				return whatif.RunFor(c, func(*sim.Snapshot) []sim.WhatIfEvent { return list.events }, func(s *sim.Snapshot) time.Duration {
					d := c.Duration("for")
					for _, e := range list.events {
						if e.Verb == "rollout" {
							d = max(d, e.At+sim.RolloutSpan(s, e.Arg))
						}
					}
					return d
				})
			}
			return whatif.Run(c, list.events, c.Duration("for"))
		}}
}

// dryRunVerb are the service actions with --dry-run: the simulation's
// answer instead of the action.
var dryRunVerb = map[string]bool{"start": true, "stop": true, "freeze": true, "thaw": true,
	"takeover": true, "giveback": true, "switch": true}

// dryRun prints what the simulation says the action would do.
func dryRun(c *cli.Context, action string, names []string) error {
	if c.Bool("local") || c.Bool("wait") {
		return cliutil.Usage("%s --dry-run: simulates the orchestrated action (without --local and --wait)", action)
	}
	return whatif.RunWith(c, func(s *sim.Snapshot) []sim.WhatIfEvent {
		var evs []sim.WhatIfEvent
		for _, n := range names {
			switch action {
			case "switch":
				evs = append(evs, sim.WhatIfEvent{Verb: action, Arg: n + ":" + c.String("to")})
			case "takeover":
				evs = append(evs, sim.WhatIfEvent{Verb: action, Arg: n + ":" + s.Local})
			default:
				evs = append(evs, sim.WhatIfEvent{Verb: action, Arg: n})
			}
		}
		return evs
	}, dryRunFor)
}

// dryRunFor is how long a --dry-run simulates.
const dryRunFor = 60 * time.Second

// rolloutDryRun is "svcmgr -s S rollout --dry-run": the rollout of each
// selected service simulated (svcmgr simulate --rollout S), for as long
// as their turns take.
func rolloutDryRun(c *cli.Context, names []string) error {
	return whatif.RunFor(c, func(*sim.Snapshot) []sim.WhatIfEvent {
		var evs []sim.WhatIfEvent
		for _, n := range names {
			evs = append(evs, sim.WhatIfEvent{Verb: "rollout", Arg: n})
		}
		return evs
	}, func(s *sim.Snapshot) time.Duration {
		var d time.Duration
		for _, n := range names {
			d = max(d, sim.RolloutSpan(s, n))
		}
		return d
	})
}
