package cliutil

import (
	"errors"
	"reflect"
	"testing"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/config"
)

func TestHoistMovesGlobalFlagsFront(t *testing.T) {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "format"},
		&cli.StringFlag{Name: "service", Aliases: []string{"s"}},
		&cli.BoolFlag{Name: "local"},
	}
	got := Hoist([]string{"svcmgr", "-s", "web", "print", "status", "--format", "json", "--local", "--", "--format"}, flags)
	want := []string{"svcmgr", "-s", "web", "--format", "json", "--local", "print", "status", "--", "--format"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	got = Hoist([]string{"svcmgr", "start", "--format=json", "--unknown", "x"}, flags)
	want = []string{"svcmgr", "--format=json", "start", "--unknown", "x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestStatusOfMapsErrorsToContractExitCodes(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{Usage("bad"), 2},
		{&config.Error{File: "a.toml", Key: "DEFAULT.x", Msg: "unknown"}, 2},
		{&api.StatusError{Msg: "bad", Status: 2}, 2},
		{&api.StatusError{Msg: "failed", Status: 1}, 1},
	}
	for _, c := range cases {
		if got := StatusOf(c.err); got != c.want {
			t.Errorf("StatusOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
