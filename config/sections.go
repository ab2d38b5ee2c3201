package config

// ServiceSections returns the sections of a service config as written, by
// section id (DEFAULT, app#web, ip#vip), each with the keys it sets and
// their TOML values (durations as written: "30s"); defaults are not added.
// The config must decode (known sections and keywords, values of the right
// type); the error names file, line and key.
func (dec Decoder) ServiceSections(file string, data []byte) (map[string]map[string]any, error) {
	d, err := dec.decodeDoc(file, data, serviceSchema)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]any, len(d.sections))
	for _, sec := range d.sections {
		m := make(map[string]any, len(sec.keys))
		for _, k := range sec.keys {
			m[k] = sec.raw[k]
		}
		out[sec.id()] = m
	}
	return out, nil
}
