package ocf

import (
	"fmt"
	"io"
	"strings"
)

// Describe prints the meta-data of agent as `crm ra info` does: the
// agent's descriptions, its parameters (required ones marked with *, their
// type and default, their long description), then its actions with the
// timeouts and intervals it advises, and what Haven makes of them.
func (m *Metadata) Describe(w io.Writer, a Agent) {
	title := a.Name()
	if m.Version != "" {
		title += " (version " + m.Version + ")"
	}
	if d := oneLine(m.ShortDesc); d != "" {
		title += ": " + d
	}
	fmt.Fprintln(w, title)
	if l := indent(m.LongDesc, ""); l != "" {
		fmt.Fprintf(w, "\n%s\n", l)
	}
	if err := Refused(a, m); err != nil {
		fmt.Fprintf(w, "\nNOT USABLE IN A HAVEN SERVICE: %v\n", err)
	}
	fmt.Fprintf(w, "\nParameters (*: required, []: default), set in params = { name = \"value\" }:\n")
	if len(m.Parameters) == 0 {
		fmt.Fprintln(w, "\n  none")
	}
	for _, p := range m.Parameters {
		head := p.Name
		if p.IsRequired() {
			head += "*"
		}
		typ := p.Content.Type
		if typ == "" {
			typ = "string"
		}
		if len(p.Content.Options) > 0 {
			var opts []string
			for _, o := range p.Content.Options {
				opts = append(opts, o.Value)
			}
			typ += ": " + strings.Join(opts, "|")
		}
		head += " (" + typ + ")"
		if p.Content.Default != "" {
			head += " [" + p.Content.Default + "]"
		}
		if d := oneLine(p.ShortDesc); d != "" {
			head += ": " + d
		}
		if p.Deprecated != nil {
			head += " (deprecated)"
		}
		if p.IsUnique() {
			head += " (unique)"
		}
		fmt.Fprintf(w, "\n%s\n", head)
		if l := indent(p.LongDesc, "    "); l != "" {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintf(w, "\nActions (the agent's advised timeouts are the defaults of start_timeout, stop_timeout, monitor_timeout):\n\n")
	for _, act := range m.Actions {
		line := fmt.Sprintf("    %-14s", act.Name)
		if act.Timeout != "" {
			line += " timeout=" + act.Timeout
		}
		if act.Interval != "" {
			line += " interval=" + act.Interval
		}
		if act.Depth != "" {
			line += " depth=" + act.Depth
		}
		if act.Role != "" {
			line += " role=" + act.Role
		}
		switch act.Name {
		case ActionStart, ActionStop, ActionMonitor, ActionValidate, ActionMetadata:
		default:
			line += "  (not used by Haven)"
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// indent trims a description's common layout and indents its lines.
func indent(s, pfx string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	var out []string
	for _, l := range lines {
		out = append(out, pfx+strings.TrimSpace(l))
	}
	return strings.TrimRight(strings.Join(out, "\n"), " \n")
}
