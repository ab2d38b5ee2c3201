package heartbeat

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"haven/dataset"
)

// TestPublishKeepsWhatWasPublished: after random changes (fixed seeds),
// the local dataset the sender keeps is what was published (a deep copy
// of it, named and numbered), and the caller modifying what it published
// afterwards (an instance's resources in place, its labels) changes
// nothing of it.
func TestPublishKeepsWhatWasPublished(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewSource(seed))
		nd := randNode(r, 20+r.Intn(20))
		snd := boundsCore(t)
		snd.s.Node = "n2"
		snd.publish(nd)
		for step := 0; step < 200; step++ {
			mutate(r, &nd)
			switch r.Intn(6) {
			case 0:
				nd.Labels = map[string]string{"az": fmt.Sprint(r.Intn(3))}
			case 1:
				nd.Labels = nil
			}
			snd.publish(nd)
			want := nd.Clone()
			want.Name, want.Gen = "n2", snd.local.Gen
			if !reflect.DeepEqual(*snd.local, want) {
				t.Fatalf("seed %d step %d: the sender keeps another dataset than the one published", seed, step)
			}
			// the caller writes what it published, in place
			for k, i := range nd.Services {
				for rid, res := range i.Resources {
					res.Label = "written"
					i.Resources[rid] = res
				}
				nd.Services[k] = i
			}
			for k := range nd.Labels {
				nd.Labels[k] = "written"
			}
			if !reflect.DeepEqual(*snd.local, want) {
				t.Fatalf("seed %d step %d: the caller's writes reached the sender's copy", seed, step)
			}
			nd = want.Clone() // the next change starts from what was published
			nd.Name = "n2"
		}
	}
}

// TestInstanceSameKnowsEveryField: instanceSame tells two instances apart
// that differ in any one field of dataset.Instance (a field added to it
// and not to instanceSame fails here); a nil and an empty resources map
// are the same (the sender's copy holds no nil one, as Clone made it).
func TestInstanceSameKnowsEveryField(t *testing.T) {
	base := dataset.Instance{}
	ty := reflect.TypeOf(base)
	for i := 0; i < ty.NumField(); i++ {
		b := base
		setNonZero(reflect.ValueOf(&b).Elem().Field(i))
		if instanceSame(base, b) || instanceSame(b, base) {
			t.Errorf("instanceSame misses a change of %s", ty.Field(i).Name)
		}
		if !instanceSame(b, b) {
			t.Errorf("instanceSame: an instance with %s set differs from itself", ty.Field(i).Name)
		}
	}
	empty := dataset.Instance{Resources: map[string]dataset.Resource{}}
	if !instanceSame(base, empty) {
		t.Error("instanceSame: a nil resources map differs from an empty one")
	}
	a := dataset.Instance{Resources: map[string]dataset.Resource{"ip#1": {Status: "up"}}}
	b := dataset.Instance{Resources: map[string]dataset.Resource{"ip#2": {Status: "up"}}}
	c := dataset.Instance{Resources: map[string]dataset.Resource{"ip#1": {Status: "down"}}}
	if instanceSame(a, b) || instanceSame(a, c) {
		t.Error("instanceSame misses a change of a resource")
	}
}

// TestConfigSameKnowsEveryField is TestInstanceSameKnowsEveryField for
// configSame and dataset.ConfigEntry.
func TestConfigSameKnowsEveryField(t *testing.T) {
	base := dataset.ConfigEntry{}
	ty := reflect.TypeOf(base)
	for i := 0; i < ty.NumField(); i++ {
		b := base
		setNonZero(reflect.ValueOf(&b).Elem().Field(i))
		if configSame(base, b) || configSame(b, base) || !configSame(b, b) {
			t.Errorf("configSame misses a change of %s", ty.Field(i).Name)
		}
	}
	a := dataset.ConfigEntry{Includes: map[string]uint64{"n1": 1}}
	b := dataset.ConfigEntry{Includes: map[string]uint64{"n1": 2}}
	if configSame(a, b) || configSame(base, dataset.ConfigEntry{Includes: map[string]uint64{}}) {
		t.Error("configSame misses a change of the lineage")
	}
}

// setNonZero sets v to a value other than its zero value (the first
// field of a struct, a map of one entry).
func setNonZero(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint64:
		v.SetUint(1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return
		}
		setNonZero(v.Field(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	default:
		panic("setNonZero: kind " + v.Kind().String())
	}
}
