package apf

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"
)

func mustRequest(method, target string) *http.Request {
	return httptest.NewRequest(method, target, nil)
}

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func levelIndex(c *Controller, name string) int {
	for i, d := range c.Dump() {
		if d.Name == name {
			return i
		}
	}
	return -1
}

func regexpLine(s, re string) bool { return regexp.MustCompile(`(?m)^` + re).MatchString(s) }

// recv receives from ch, failing the test after 10 s.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing received within 10s", what)
		panic("unreachable")
	}
}
