package config_test

import (
	"errors"
	"testing"

	. "haven/config"
	"haven/config/tomlfile"
)

func FuzzParseService(f *testing.F) {
	seeds := []string{
		goodService,
		"",
		"[DEFAULT]\n",
		"[app.web]\nstart = \"{app.web.stop}\"\nstop = \"{app.web.start}\"\n",
		"[app.web]\nstart = \"/bin/{rid} {DEFAULT.nodes} {ip.vip.ipname} ${HOME} {print $1}\"\n[ip.vip]\nipname = \"{nodename}\"\nipdev = \"eth0\"\n",
		"[DEFAULT]\nconstraints = '$(\"{nodename}\"==\"node1\" or \"{node.env}\" in (DEV, TST))'\n",
		"[DEFAULT]\nconstraints = 'not (node.load15 > 3'\n",
		"[DEFAULT]\nnodes = \"n1 n2\"\npriority = 99999999999\n",
		"[app]\nstart = 1\n",
		"[[app]]\nstart = 1\n",
		"[app.web]\ntimeout = 1e3\n",
		"[app.web]\ntimeout = 1979-05-27\n",
		"[app.\"a.b\"]\nstart = \"x\"\n",
		"a.b.c = 1\n",
		"[DEFAULT]\nnodes = [[\"x\"]]\n",
		"[ip.v]\nipname = \"::1\"\nipdev = \"lo\"\nnetmask = \"255.255.255.0\"\n",
		"[ip.vip]\nipname = \"10.0.0.5\"\nipdev = \"eth0\"\n[container.web]\nimage = \"x\"\nnetwork = \"bridge\"\nports = [\"{ip#vip.ipname}:8080:80\", \"[fd00::1]:1:2/udp\", \"8080:80\"]\n",
		"[DEFAULT\n",
		"x = '''\n[app.web]\n'''\n",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		s, err := tomlfile.ParseService("fuzz.toml", "fuzz", []byte(data))
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %q is a %T, not a *config.Error", err, err)
			}
			_ = err.Error()
			return
		}
		if _, err := s.ForNode("n1", "/var/fuzz"); err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("ForNode error %q is a %T", err, err)
			}
		}
		if _, err := tomlfile.GetKeyword("fuzz.toml", []byte(data), "DEFAULT.nodes"); err != nil {
			t.Fatalf("GetKeyword on a valid file: %v", err)
		}
		out, err := tomlfile.SetKeyword("fuzz.toml", []byte(data), "DEFAULT.priority=5")
		if err != nil {
			return // the canonical form may reject a value the original held
		}
		if _, err := tomlfile.ParseService("fuzz.toml", "fuzz", out); err != nil {
			t.Fatalf("SetKeyword produced an invalid file: %v\n%s", err, out)
		}
	})
}
