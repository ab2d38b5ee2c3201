package cmdline

import (
	"reflect"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "   \t ", want: nil},
		{in: "/bin/true", want: []string{"/bin/true"}},
		{in: "  a   b\tc  ", want: []string{"a", "b", "c"}},
		{in: `sh -c 'echo hello; exit 3'`, want: []string{"sh", "-c", "echo hello; exit 3"}},
		{in: `echo "a b" c`, want: []string{"echo", "a b", "c"}},
		{in: `echo "say \"hi\"" \$HOME`, want: []string{"echo", `say "hi"`, "$HOME"}},
		{in: `echo "back\slash" "\\"`, want: []string{"echo", `back\slash`, `\`}},
		{in: `echo 'it''s' x`, want: []string{"echo", "its", "x"}},
		{in: `echo 'a "b" \c'`, want: []string{"echo", `a "b" \c`}},
		{in: `a\ b c`, want: []string{"a b", "c"}},
		{in: `a\'b`, want: []string{"a'b"}},
		{in: `x '' ""`, want: []string{"x", "", ""}},
		{in: `pre"mid"'post' z`, want: []string{"premidpost", "z"}},
		{in: "a\\\nb", want: []string{"ab"}},
		{in: `$VAR * ~ | ;`, want: []string{"$VAR", "*", "~", "|", ";"}},
		{in: `echo 'unbalanced`, wantErr: true},
		{in: `echo "unbalanced`, wantErr: true},
		{in: `echo "esc\"`, wantErr: true},
		{in: `echo trailing\`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := Split(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Split(%q) = %q, nil; want an error", tt.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Split(%q) error %v; want %q", tt.in, err, tt.want)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
