//go:build race

package fairqueue

// raceEnabled reports whether the race detector is on: sync.Pool then
// drops pooled values at random, so allocation counts are not meaningful.
const raceEnabled = true
