// Package config owns the configuration files of Haven: node.toml,
// cluster.toml and services/NAME.toml. It parses them (BurntSushi/toml),
// validates them and returns typed configs (types.go). One keyword table
// (keywords.go) drives parsing, defaults, validation, the get/set/unset
// edits of svcmgr and the generated reference docs/keywords.md.
//
// Every error is a *Error naming the file, the line when known and the
// keyword. Services keep their string values unexpanded; ForNode expands
// the references ({nodename}, {name}, {var}, {rid}, {SECTION.KEY}) for one
// node. The package does no IO beyond reading the file it is asked to load.
package config

//go:generate go run ./gendoc ../docs/keywords.md
