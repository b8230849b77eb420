// Package cliflag holds the flag.Value types the fairslice command and the
// example server share: a server concurrency that may be "auto", and
// backend capacity changes "T=N".
package cliflag

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fairslice/fairslice/internal/backendsim"
)

// Concurrency is --server-concurrency: a positive number of seats, or
// "auto" for the adaptive total (Auto set, N kept).
type Concurrency struct {
	N    int
	Auto bool
}

// String is "auto" or the number.
func (c *Concurrency) String() string {
	if c.Auto {
		return "auto"
	}
	return strconv.Itoa(c.N)
}

// Set parses "auto" or a number of seats.
func (c *Concurrency) Set(s string) error {
	if s == "auto" {
		c.Auto = true
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is neither a number of seats nor auto", s)
	}
	c.N, c.Auto = n, false
	return nil
}

// SlotChanges is the repeatable --backend-slots-at T=N: the backend's
// capacity becomes N at T after the start.
type SlotChanges []backendsim.Change

// String lists the changes as T=N,T=N.
func (s *SlotChanges) String() string {
	parts := make([]string, len(*s))
	for i, c := range *s {
		parts[i] = fmt.Sprintf("%v=%d", c.At, c.Slots)
	}
	return strings.Join(parts, ",")
}

// Set parses one T=N and appends it.
func (s *SlotChanges) Set(v string) error {
	at, n, ok := strings.Cut(v, "=")
	d, err := time.ParseDuration(at)
	slots, err2 := strconv.Atoi(n)
	if !ok || err != nil || err2 != nil || d < 0 || slots <= 0 {
		return fmt.Errorf("%q is not T=N (a duration and a positive number of slots, like 15s=4)", v)
	}
	*s = append(*s, backendsim.Change{At: d, Slots: slots})
	return nil
}
