package config

import "fmt"

// Tree is a TOML document as the shell decodes it: the top-level table in
// the form BurntSushi/toml decodes into a map[string]any (tables are
// map[string]any, arrays []any, integers int64), and every key path in file
// order.
type Tree struct {
	Values map[string]any
	Keys   [][]string
}

// A Decoder decodes TOML text; malformed text is a *SyntaxError when the
// decoder can locate it.
//
// config decodes nothing itself: the pure core uses its types and must not
// reach a TOML parser or the file system (TestCorePackagesArePure). The
// shell passes tomlfile.Decode (package haven/config/tomlfile, which also
// reads the files); parsing and editing are methods of Decoder so that
// they stay here, over decoded data.
type Decoder func(text string) (Tree, error)

// SyntaxError is malformed TOML as a Decoder reports it.
type SyntaxError struct {
	Line    int    // 1-based, 0 when unknown
	LastKey string // the last key read (dotted), "" when none
	Msg     string // the message without position
	Err     error  // the decoder's own error
}

func (e *SyntaxError) Error() string { return e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// decodeInline decodes one TOML value written inline.
func (dec Decoder) decodeInline(t string) (any, error) {
	if dec == nil {
		return nil, fmt.Errorf("invalid value %s: no TOML decoder", t)
	}
	tree, err := dec("v = " + t)
	if err != nil {
		return nil, fmt.Errorf("invalid value %s: %v", t, err)
	}
	return tree.Values["v"], nil
}
