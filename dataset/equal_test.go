package dataset

import (
	"reflect"
	"testing"
	"time"
)

// TestInstanceEqualKnowsEveryField: Instance.Equal tells two instances apart
// that differ in any one field of Instance (a field added to it
// and not to Instance.Equal fails here); a nil and an empty resources map
// are the same (the sender's copy holds no nil one, as Clone made it).
func TestInstanceEqualKnowsEveryField(t *testing.T) {
	base := Instance{}
	ty := reflect.TypeOf(base)
	for i := 0; i < ty.NumField(); i++ {
		b := base
		setNonZero(reflect.ValueOf(&b).Elem().Field(i))
		if base.Equal(b) || b.Equal(base) {
			t.Errorf("Instance.Equal misses a change of %s", ty.Field(i).Name)
		}
		if !b.Equal(b) {
			t.Errorf("Instance.Equal: an instance with %s set differs from itself", ty.Field(i).Name)
		}
	}
	empty := Instance{Resources: map[string]Resource{}}
	if !base.Equal(empty) {
		t.Error("Instance.Equal: a nil resources map differs from an empty one")
	}
	a := Instance{Resources: map[string]Resource{"ip#1": {Status: "up"}}}
	b := Instance{Resources: map[string]Resource{"ip#2": {Status: "up"}}}
	c := Instance{Resources: map[string]Resource{"ip#1": {Status: "down"}}}
	if a.Equal(b) || a.Equal(c) {
		t.Error("Instance.Equal misses a change of a resource")
	}
}

// TestConfigEqualKnowsEveryField is TestInstanceEqualKnowsEveryField for
// ConfigEntry.Equal and ConfigEntry.
func TestConfigEqualKnowsEveryField(t *testing.T) {
	base := ConfigEntry{}
	ty := reflect.TypeOf(base)
	for i := 0; i < ty.NumField(); i++ {
		b := base
		setNonZero(reflect.ValueOf(&b).Elem().Field(i))
		if base.Equal(b) || b.Equal(base) || !b.Equal(b) {
			t.Errorf("ConfigEntry.Equal misses a change of %s", ty.Field(i).Name)
		}
	}
	a := ConfigEntry{Includes: map[string]uint64{"n1": 1}}
	b := ConfigEntry{Includes: map[string]uint64{"n1": 2}}
	if a.Equal(b) || base.Equal(ConfigEntry{Includes: map[string]uint64{}}) {
		t.Error("ConfigEntry.Equal misses a change of the lineage")
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
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem())) // a pointer to a zero value: not nil
	default:
		panic("setNonZero: kind " + v.Kind().String())
	}
}
