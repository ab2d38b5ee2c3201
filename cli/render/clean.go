package render

import (
	"reflect"

	"haven/internal/termtext"
)

// cleanAll cleans, in place, every string reachable from v (a pointer):
// struct fields, slice and map elements, map keys. The render functions
// call it on what they are given, so that no view can miss a field.
func cleanAll(v any) {
	cleanValue(reflect.ValueOf(v))
}

func cleanValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); termtext.NeedsClean(s, false) {
				v.SetString(termtext.Clean(s))
			}
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer {
			cleanValue(v.Elem())
			return
		}
		if v.CanSet() { // an interface's value is not addressable: clean a copy
			c := reflect.New(v.Elem().Type()).Elem()
			c.Set(v.Elem())
			cleanValue(c)
			v.Set(c)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				cleanValue(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			cleanValue(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			cleanValue(e)
			nk := k
			if k.Kind() == reflect.String && termtext.NeedsClean(k.String(), false) {
				nk = reflect.New(k.Type()).Elem()
				nk.SetString(termtext.Clean(k.String()))
				v.SetMapIndex(k, reflect.Value{})
			}
			v.SetMapIndex(nk, e)
		}
	}
}
