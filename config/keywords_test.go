package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestKeywordTable(t *testing.T) {
	seen := map[string]bool{}
	for i := range Keywords {
		kw := &Keywords[i]
		id := kw.Section + "." + kw.Key
		if seen[id] {
			t.Errorf("%s: duplicate keyword", id)
		}
		seen[id] = true
		if kw.Doc == "" {
			t.Errorf("%s: no doc", id)
		}
		if kw.Type == TypeEnum && !slices.Contains(kw.Allowed, kw.Default) {
			t.Errorf("%s: default %q not allowed", id, kw.Default)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: bad default: %v", id, r)
				}
			}()
			defaultValue(kw)
		}()
		if kw.Field == "" {
			if kw.Section != SectionNodes && kw.Section != SectionNodeKeys && kw.Section != SectionAdminKeys {
				t.Errorf("%s: no field", id)
			}
			continue
		}
		var typ reflect.Type
		switch kw.Section {
		case SectionNode:
			typ = reflect.TypeOf(NodeConfig{})
		case SectionHB:
			typ = reflect.TypeOf(HBConfig{})
		case SectionHBDisk:
			typ = reflect.TypeOf(HBDiskConfig{})
		case SectionCluster:
			typ = reflect.TypeOf(ClusterConfig{})
		case SectionArbitrator:
			typ = reflect.TypeOf(Arbitrator{})
		case SectionStonith:
			typ = reflect.TypeOf(Stonith{})
		case SectionHook:
			typ = reflect.TypeOf(Hook{})
		case SectionDefault:
			typ = reflect.TypeOf(ServiceConfig{})
		default:
			typ = reflect.TypeOf(ResourceConfig{})
		}
		f, ok := typ.FieldByName(kw.Field)
		if !ok {
			t.Errorf("%s: no field %s in %s", id, kw.Field, typ)
			continue
		}
		if got := reflect.TypeOf(defaultValue(kw)); got != f.Type {
			t.Errorf("%s: field %s is %s, value is %s", id, kw.Field, f.Type, got)
		}
	}
}

func TestKeywordsDocUpToDate(t *testing.T) {
	path := filepath.Join("..", "docs", "keywords.md")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go generate ./config)", err)
	}
	if string(got) != KeywordsMarkdown() {
		t.Errorf("%s is not up to date: run go generate ./config", path)
	}
	for i := range Keywords {
		if !strings.Contains(string(got), "`"+Keywords[i].Key+"`") {
			t.Errorf("keyword %s missing from the doc", Keywords[i].Key)
		}
	}
}
