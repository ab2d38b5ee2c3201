// Command gendist writes the man pages and the shell completions of the
// three tools from their urfave/cli definitions (make man, make completion,
// make install, make deb):
//
//	go run ./cmd/gendist -out DIR [-docdir DOCDIR]
//
// writes DIR/man/TOOL.1, DIR/bash/TOOL, DIR/zsh/_TOOL and DIR/fish/TOOL.fish.
// The bash and zsh scripts ask the tool itself for the candidates
// (urfave/cli's --generate-bash-completion), so they follow the commands and
// flags of the installed binary; fish gets urfave/cli's static script.
// The FILES section of the man pages names the installed layout: the
// system paths of package paths and DOCDIR (make install's, from PREFIX).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"haven/internal/paths"
	"haven/nodemgr"
	"haven/svcmgr"
	"haven/svcmon"
)

func main() {
	out := flag.String("out", "bin/share", "output directory")
	docdir := flag.String("docdir", DefaultDocDir, "where make install puts the docs and examples (the man pages' FILES)")
	flag.Parse()
	if err := write(*out, *docdir); err != nil {
		fmt.Fprintln(os.Stderr, "gendist:", err)
		os.Exit(1)
	}
}

// Apps are the shipped tools, by name.
func apps() []*cli.App { return []*cli.App{nodemgr.App(), svcmgr.App(), svcmon.App()} }

// DefaultDocDir is the doc directory of the .deb (make install's DOCDIR
// with PREFIX=/usr).
const DefaultDocDir = "/usr/share/doc/haven"

func write(out, docdir string) error {
	for _, app := range apps() {
		man, err := Man(app, docdir)
		if err != nil {
			return fmt.Errorf("%s man page: %w", app.Name, err)
		}
		fish, err := app.ToFishCompletion()
		if err != nil {
			return fmt.Errorf("%s fish completion: %w", app.Name, err)
		}
		files := map[string]string{
			filepath.Join("man", app.Name+".1"):     man,
			filepath.Join("bash", app.Name):         Bash(app.Name),
			filepath.Join("zsh", "_"+app.Name):      Zsh(app.Name),
			filepath.Join("fish", app.Name+".fish"): fish,
		}
		for name, text := range files {
			path := filepath.Join(out, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// Man is the section 1 page of app: urfave/cli's page (name, synopsis,
// global options, commands) followed by the sections it does not write;
// docdir is where the docs and examples are installed.
func Man(app *cli.App, docdir string) (string, error) {
	page, err := app.ToManWithSection(1)
	if err != nil {
		return "", err
	}
	page = synopsis(page, app)
	var b strings.Builder
	b.WriteString(page)
	if !strings.HasSuffix(page, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(roff(extra(app.Name, paths.New(""), docdir)))
	return b.String(), nil
}

// synopsis replaces urfave/cli's SYNOPSIS (the bare tool name, then each
// global flag as `[--format]=[value]`) with the tool's usage lines and its
// global flags with their values spelled out.
func synopsis(page string, app *cli.App) string {
	start := strings.Index(page, ".SH SYNOPSIS\n")
	end := strings.Index(page, ".SH GLOBAL OPTIONS")
	if start < 0 || end < start {
		return page
	}
	var globals []string
	for _, f := range app.Flags {
		names := f.Names()
		name := "--" + names[0]
		if len(names) > 1 && len(names[1]) == 1 {
			name = "-" + names[1] + "|" + name
		}
		switch f.(type) {
		case *cli.BoolFlag:
			globals = append(globals, "["+name+"]")
		default:
			globals = append(globals, "["+name+" "+flagValue(names[0])+"]")
		}
	}
	var b strings.Builder
	b.WriteString(".SH SYNOPSIS\n.EX\n")
	fmt.Fprintf(&b, "%s %s COMMAND [OPTIONS]\n", app.Name, escape(strings.Join(globals, " "), true))
	for _, l := range strings.Split(app.UsageText, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			b.WriteString(escape(l, true) + "\n")
		}
	}
	b.WriteString(".EE\n\n")
	return page[:start] + b.String() + page[end:]
}

// flagValue names the value of a global flag in the synopsis.
func flagValue(name string) string {
	switch name {
	case "format":
		return "human|json"
	case "root":
		return "DIR"
	case "service":
		return "SELECTOR"
	}
	return strings.ToUpper(name)
}

type section struct {
	title string
	items [][2]string // tag, text; a single paragraph when tag is ""
}

func extra(tool string, p paths.Paths, docdir string) []section {
	var s []section
	if tool == "nodemgr" {
		s = append(s, section{"SYSTEMD", [][2]string{
			{"", "The haven.service unit runs `nodemgr daemon run` (Type=notify: ready once the API answers and the first resource checks ran; the event loop pings the watchdog). Stopping the unit runs `nodemgr daemon stop` (maintenance: services keep running), or `nodemgr daemon shutdown` when the host itself shuts down. Under systemd the daemon logs to the journal (journalctl -u haven) instead of /var/log/haven/node.log."},
		}})
	}
	if ex := examples[tool]; len(ex) > 0 {
		s = append(s, section{"EXAMPLES", ex})
	}
	s = append(s,
		section{"FILES", [][2]string{
			{p.NodeConf, "this node's config"},
			{p.Cluster, "the cluster config, identical on every node; it holds the cluster secret (mode 0600)"},
			{p.ServiceDir + "/NAME.toml", "the service configs"},
			{p.Var + "/", "the daemon's durable state and each service's private directory (services/NAME/)"},
			{p.Socket, "the daemon's local API"},
			{p.Log + "/", "node.log (when not run by systemd) and services/NAME.log"},
			{docdir + "/examples/", "example configs"},
			{docdir + "/docs/", "the contract, the behaviour, the operations guide, the keywords, security, the metrics"},
		}},
		section{"ENVIRONMENT", [][2]string{
			{"HAVEN_ROOT", "like --root: every path above lives below this directory instead (R/etc, R/var, R/run, R/log)"},
		}},
		section{"EXIT STATUS", [][2]string{
			{"0", "success"},
			{"1", "the action failed"},
			{"2", "bad usage or a bad config (the error names the file, the line and the key)"},
		}},
		section{"SEE ALSO", [][2]string{{"", seeAlso(tool)}}},
	)
	return s
}

// examples are the EXAMPLES of each page: a command and what it does.
var examples = map[string][][2]string{
	"nodemgr": {
		{"systemctl enable --now haven", "start the daemon under systemd (or `nodemgr daemon start` by hand)"},
		{"nodemgr daemon status", "the daemon, the heartbeat and each peer as this node sees them"},
		{"nodemgr freeze", "no service starts or stops here by itself (`nodemgr thaw` ends it)"},
		{"nodemgr drain", "freeze this node and stop its services: the others take them over (e.g. before maintenance)"},
		{"nodemgr events --format json", "follow the cluster's events, one JSON object a line"},
		{"nodemgr --root /tmp/n1 daemon start", "a daemon with every file below /tmp/n1 (tests, demos)"},
	},
	"svcmgr": {
		{"svcmgr validate --config web.toml", "check a config without a daemon (exit 2 names the file, the line and the key)"},
		{"svcmgr -s web create --config web.toml", "install it on every node"},
		{"svcmgr -s web create --force --config web.toml", "install it although its hard_affinity or parents name a service not created yet, or an OCF agent no node has yet (configs installed in any order): a warning each; it waits meanwhile"},
		{"svcmgr -s web start --wait", "start it where the placement policy says, and wait until it is up"},
		{"svcmgr -s web switch --to n2 --wait", "move it to n2"},
		{"svcmgr -s web explain", "why it runs where it runs, or why it does not"},
		{"svcmgr -s web print status --format json", "the status object"},
		{"svcmgr -s web set --kw app#main.timeout=30s", "change one keyword (checked, distributed)"},
		{"svcmgr -s web logs --node n2", "the last lines of n2's log of web"},
		{"svcmgr -s web logs --follow", "follow this node's log of web"},
	},
	"svcmon": {
		{"svcmon", "the cluster: nodes, heartbeats, services and where they run"},
		{"svcmon --watch", "the same, redrawn on every change"},
		{"svcmon --format json", "the cluster status object"},
	},
}

func seeAlso(tool string) string {
	var refs []string
	for _, t := range []string{"nodemgr", "svcmgr", "svcmon"} {
		if t != tool {
			refs = append(refs, `\fB`+t+`\fP(1)`)
		}
	}
	return strings.Join(refs, ", ") + `, \fBsystemctl\fP(1), \fBjournalctl\fP(1)`
}

// roff renders sections as man(7) requests.
func roff(secs []section) string {
	var b strings.Builder
	for _, s := range secs {
		fmt.Fprintf(&b, ".SH %s\n", s.title)
		for _, it := range s.items {
			if it[0] == "" {
				fmt.Fprintf(&b, ".PP\n%s\n", escape(it[1], false))
				continue
			}
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", escape(it[0], true), escape(it[1], true))
		}
	}
	return b.String()
}

// escape protects roff's special characters: a leading dot or quote, and
// the backslash unless the text is already roff (SEE ALSO).
func escape(s string, plain bool) string {
	if plain {
		s = strings.ReplaceAll(s, `\`, `\e`)
	}
	s = strings.ReplaceAll(s, "-", `\-`)
	// `code` in bold
	for i := 0; strings.Contains(s, "`"); i++ {
		s = strings.Replace(s, "`", [2]string{`\fB`, `\fP`}[i%2], 1)
	}
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// Bash is the bash completion of tool: the words typed so far are handed
// back to the tool, which prints the candidate commands or flags.
func Bash(tool string) string {
	return strings.ReplaceAll(`# bash completion for TOOL (Haven); generated by cmd/gendist
_haven_TOOL_complete() {
  local cur words cword
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n "=:" || return
  else
    cur="${COMP_WORDS[COMP_CWORD]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  local -a req=("${words[@]:0:$cword}")
  if [[ "$cur" == -* ]]; then
    req+=("$cur")
  fi
  local opts
  opts=$("${req[@]}" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _haven_TOOL_complete TOOL
`, "TOOL", tool)
}

// Zsh is the zsh completion of tool, with each command's usage line as its
// description (urfave/cli prints "name:usage" when $0 names zsh).
func Zsh(tool string) string {
	return strings.ReplaceAll(`#compdef TOOL
# zsh completion for TOOL (Haven); generated by cmd/gendist
local cur=${words[CURRENT]}
local -a req opts
req=(${words[1,CURRENT-1]})
[[ $cur == -* ]] && req+=($cur)
opts=("${(@f)$(env 0=zsh $req --generate-bash-completion 2>/dev/null)}")
if [[ -n ${opts[1]} ]]; then
  _describe 'values' opts
else
  _files
fi
`, "TOOL", tool)
}
