package slicer

import (
	"reflect"
	"testing"
)

// TestEqualIgnoringVersionCoversEveryField guards the field-by-field
// comparison: every field of ObjectRef but ResourceVersion must count.
func TestEqualIgnoringVersionCoversEveryField(t *testing.T) {
	base := ObjectRef{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u", APIVersion: "v1", ResourceVersion: "1", FieldPath: "f"}
	for i := range reflect.TypeFor[ObjectRef]().NumField() {
		o := base
		f := reflect.ValueOf(&o).Elem().Field(i)
		f.SetString(f.String() + "x")
		name := reflect.TypeFor[ObjectRef]().Field(i).Name
		if got, want := base.equalIgnoringVersion(&o), name == "ResourceVersion"; got != want {
			t.Errorf("changing %s: equal %v, want %v", name, got, want)
		}
	}
}
