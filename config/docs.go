package config

import (
	"fmt"
	"strings"
)

// KeywordsMarkdown renders the keyword table as docs/keywords.md.
func KeywordsMarkdown() string {
	var b strings.Builder
	b.WriteString(`# Haven configuration keywords

<!-- Generated from config/keywords.go by "go generate ./config"; do not edit. -->

Haven reads three kinds of TOML files (see [contract.md](contract.md), section 2, for the paths):
` + "`node.toml`, `cluster.toml` and `services/NAME.toml`" + `. Unknown sections or keywords
are errors. Every error names the file, the line when known and the keyword, as in
` + "`etc/services/web.toml:7: app#web.timeout: invalid duration \"3x\": ...`" + `.

Value types:

| type | written as |
|---|---|
| string | ` + "`\"text\"`" + ` |
| int | ` + "`10`" + ` |
| bool | ` + "`true`, `false`" + ` |
| duration | a Go duration ` + "`\"16s\"`, `\"500ms\"`, `\"1m30s\"`" + `, or an integer of seconds ` + "`30` / `\"30\"`" + ` |
| list | an array of strings ` + "`[\"a\", \"b\"]`" + `; a plain string is split on blanks |
| map | a table of strings ` + "`{ env = \"PRD\" }`" + ` |
| enum | one of the allowed strings |

## References

In a service file, every string value (and every element of a list) may hold references,
expanded for each node when the service is used there:
` + "`{nodename}`" + ` (the node), ` + "`{name}`" + ` (the service; ` + "`{svcname}`" + ` too), ` + "`{var}`" + ` (the service's
private directory), ` + "`{rid}`" + ` (the resource id, in a resource section only), ` + "`{DEFAULT.KEY}`" + ` and
` + "`{TYPE.NAME.KEY}`" + ` or ` + "`{TYPE#NAME.KEY}`" + ` (another keyword's value, default included, itself expanded;
lists expand blank separated, durations as ` + "`30s`" + `). An unknown reference is an error at load.
Braces around anything else (` + "`awk '{print $1}'`" + `) and ` + "`${VAR}`" + ` are left alone.
` + "`DEFAULT.constraints`" + ` is never expanded: ` + "`{nodename}`" + ` there belongs to the OpenSVC constraint form.

## svcmgr get / set / unset

Keywords are named ` + "`DEFAULT.KEY`" + ` (or just ` + "`KEY`" + `), ` + "`TYPE#NAME.KEY`" + ` or ` + "`TYPE.NAME.KEY`" + `.
` + "`set --kw K=V`" + ` replaces a value, ` + "`K+=V`" + ` adds to a list the elements not in it yet, ` + "`K-=V`" + ` removes
elements from a list. V is written without TOML quotes; a list is ` + "`[\"a\", \"b\"]`" + ` or blank separated
words. ` + "`get --kw K`" + ` prints the effective value (the default when unset), unexpanded: lists as
` + "`[\"a\", \"b\"]`" + `, maps as ` + "`{\"k\": \"v\"}`" + `, durations as Go durations. ` + "`unset --kw K`" + ` removes the keyword so
that its default applies. A change that would make the file invalid is refused and nothing
changes. set and unset rewrite the file in a canonical order ([DEFAULT], then ip, fs, ocf and app
resources by name; keys in the order of this page): comments and layout are not kept.
`)
	files := []struct {
		title    string
		sections []struct{ kind, header string }
	}{
		{"node.toml", []struct{ kind, header string }{{SectionNode, "[node]"}, {SectionHB, "[hb]"}, {SectionHBDisk, "[hb.disk]"}, {SectionHook, "[hook.NAME]"}}},
		{"cluster.toml", []struct{ kind, header string }{{SectionCluster, "[cluster]"}, {SectionNodes, "[nodes]"}, {SectionNodeKeys, "[node_keys]"}, {SectionAdminKeys, "[admin_keys]"}, {SectionArbitrator, "[arbitrator.NAME]"}, {SectionStonith, "[stonith.NODE]"}}},
		{"services/NAME.toml", []struct{ kind, header string }{
			{SectionDefault, "[DEFAULT]"},
			{SectionResource, "resources: keywords of every [TYPE.NAME]"},
			{SectionApp, "[app.NAME] (rid app#NAME)"},
			{SectionIP, "[ip.NAME] (rid ip#NAME)"},
			{SectionFS, "[fs.NAME] (rid fs#NAME)"},
			{SectionOCF, "[ocf.NAME] (rid ocf#NAME)"},
			{SectionContainer, "[container.NAME] (rid container#NAME)"},
		}},
	}
	for _, f := range files {
		fmt.Fprintf(&b, "\n## %s\n", f.title)
		for _, s := range f.sections {
			fmt.Fprintf(&b, "\n### %s\n\n", s.header)
			b.WriteString("| keyword | type | default | description |\n|---|---|---|---|\n")
			for i := range Keywords {
				kw := &Keywords[i]
				if kw.Section != s.kind {
					continue
				}
				typ := kw.Type.String()
				if kw.Type == TypeEnum {
					typ = strings.Join(kw.Allowed, " \\| ")
				}
				def := "`" + kw.Default + "`"
				switch {
				case kw.Required:
					def = "required"
				case kw.Default == "":
					def = ""
				}
				doc := kw.Doc
				if kw.NotYet != "" {
					doc = "**Not implemented yet** (" + kw.NotYet + "): a value other than the default is refused at load. " + doc
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", kw.Key, typ, def, strings.ReplaceAll(doc, "|", "\\|"))
			}
		}
	}
	return b.String()
}
