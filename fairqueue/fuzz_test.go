package fairqueue

import (
	"slices"
	"testing"
	"time"
)

// FuzzQueueSet feeds operation sequences decoded from the input to a
// QueueSet and to the reference port, requiring the same decisions and
// state and the invariants after every operation.
func FuzzQueueSet(f *testing.F) {
	f.Add([]byte{3, 1, 2, 4, 0, 0, 0, 1, 0, 1, 2, 5, 1, 0, 3, 9, 4, 2})
	f.Add([]byte{8, 2, 3, 2, 1, 0, 7, 1, 0, 0, 0, 3, 1, 4, 8, 2, 2, 6, 0, 5, 6, 3, 0, 2, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		pos := 0
		next := func() int {
			if pos >= len(data) {
				return 0
			}
			pos++
			return int(data[pos-1])
		}
		mkCfg := func() Config {
			q := next()%14 - 1
			c := Config{Queues: q, HandSize: 1 + next()%4, QueueLengthLimit: next() % 5, ConcurrencyLimit: next() % 6,
				FixZeroLimitAdmission: next()%2 == 1}
			// One byte for both flags keeps the decoding of older inputs.
			flags := next()
			c.ClampFinalSeatsWithoutQueues = flags&1 != 0
			c.FixStaleQueueRemoval = flags&2 != 0
			return c
		}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		cfg := mkCfg()
		qs, err := NewQueueSet(cfg, start)
		if err != nil {
			return
		}
		ref := newRef(cfg, start)
		now := start
		var ours []*Request
		var refs []*refReq
		var got []int
		qs.SetDispatchFunc(func(r *Request) { got = append(got, r.Value.(int)) })
		pickIn := func(states ...State) int {
			var c []int
			for i, r := range ours {
				if slices.Contains(states, r.state) {
					c = append(c, i)
				}
			}
			if len(c) == 0 {
				return -1
			}
			return c[next()%len(c)]
		}
		for pos < len(data) {
			switch next() % 7 {
			case 0, 1:
				w := WorkEstimate{InitialSeats: uint64(next() % 4), FinalSeats: uint64(next() % 7)}
				if w.FinalSeats > 0 {
					w.AdditionalLatency = time.Duration(next()) * 97 * time.Microsecond
				}
				hash := uint64(next()) * 0x9E3779B97F4A7C15
				id := len(ours)
				r, rr := &Request{Value: id}, &refReq{id: id}
				ours, refs = append(ours, r), append(refs, rr)
				reason := qs.Arrive(now, r, hash, w)
				wantReason, _ := ref.arrive(now, rr, hash, w)
				if reason != wantReason {
					t.Fatalf("Arrive #%d = %q, reference %q", id, reason, wantReason)
				}
			case 2:
				if i := pickIn(StateExecuting); i >= 0 {
					qs.Finish(now, ours[i])
					ref.finish(now, refs[i])
				}
			case 3:
				if i := pickIn(StateLingering); i >= 0 {
					qs.Release(now, ours[i])
					ref.releaseLater(now, refs[i])
				}
			case 4:
				if i := pickIn(StateWaiting, StateExecuting); i >= 0 {
					if a, b := qs.Cancel(now, ours[i]), ref.cancel(now, refs[i]); a != b {
						t.Fatalf("Cancel = %v, reference %v", a, b)
					}
				}
			case 5:
				now = now.Add(time.Duration(next()*next()) * 13 * time.Microsecond)
			case 6:
				c := mkCfg()
				if (qs.Reconfigure(now, c) == nil) != ref.configure(now, c) {
					t.Fatalf("Reconfigure(%+v) disagrees", c)
				}
			}
			want := make([]int, 0, len(ref.dispatched))
			for _, r := range ref.dispatched {
				want = append(want, r.id)
			}
			ref.dispatched = ref.dispatched[:0]
			if !slices.Equal(got, want) {
				t.Fatalf("dispatched %v, reference %v", got, want)
			}
			got = got[:0]
			if err := qs.verify(); err != nil {
				t.Fatal(err)
			}
			h := diffHarness{qs: qs, ref: ref}
			if err := h.compareState(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
