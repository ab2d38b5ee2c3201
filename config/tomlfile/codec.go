package tomlfile

import "haven/config"

// ServiceCodec parses and edits the text of service configs for the node
// core (node.ConfigCodec), which reaches no TOML parser. File names the
// file of a service in errors.
type ServiceCodec struct {
	File func(name string) string
}

// ParseService parses and validates the config of service name.
func (c ServiceCodec) ParseService(name string, raw []byte) (*config.ServiceConfig, error) {
	return ParseService(c.File(name), name, raw)
}

// EditService applies set, add (set that may add a resource) or unset
// (op) of the keywords kws to raw, in order.
func (c ServiceCodec) EditService(name string, raw []byte, op string, kws []string) ([]byte, error) {
	file := c.File(name)
	var err error
	for _, k := range kws {
		switch op {
		case "set":
			raw, err = SetKeyword(file, raw, k)
		case "add":
			raw, err = AddKeyword(file, raw, k)
		default:
			raw, err = UnsetKeyword(file, raw, k)
		}
		if err != nil {
			return nil, err
		}
	}
	return raw, nil
}
