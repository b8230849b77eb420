package flowschema

import "testing"

func TestLintDefaultConfigClean(t *testing.T) {
	f, err := Lint(DefaultConfig())
	if err != nil || len(f) != 0 {
		t.Errorf("Lint(DefaultConfig()) = %v, %v; want no findings", f, err)
	}
}
