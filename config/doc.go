// Package config owns the configuration files of Haven: node.toml,
// cluster.toml and services/NAME.toml. It validates them once decoded and
// returns typed configs (types.go). One keyword table
// (keywords.go) drives parsing, defaults, validation, the get/set/unset
// edits of svcmgr and the generated reference docs/keywords.md.
//
// Every error is a *Error naming the file, the line when known and the
// keyword. Services keep their string values unexpanded; ForNode expands
// the references ({nodename}, {name}, {var}, {rid}, {SECTION.KEY}) for one
// node.
//
// config is pure: it decodes no TOML and opens no file, because the core
// (monitor, placement, affinity, view) uses its types and must reach
// neither (monitor's TestCorePackagesArePure). Decoding and reading the
// files is the shell's package config/tomlfile; the parsing and editing
// functions here are methods of the Decoder it passes
// (tomlfile.ParseService is Decode.ParseService).
package config

//go:generate go run ../cmd/gendoc ../docs/keywords.md
