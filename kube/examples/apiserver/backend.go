package main

import (
	"context"
	"sync"
	"time"

	"github.com/fairslice/fairslice/kube/internal/cliflag"
)

// backend is a resource of limited capacity behind the handler: each
// request holds one of its slots for its work, queueing first come first
// served inside the handler when none is free, as a saturated database or
// CPU would. The capacity can change while it runs.
type backend struct {
	mu      sync.Mutex
	slots   int
	busy    int
	waiting []chan struct{} // FIFO; closed when given a slot
}

func newBackend(slots int) *backend { return &backend{slots: slots} }

// acquire takes a slot, waiting for one; on ctx's end it returns ctx's
// error holding none.
func (b *backend) acquire(ctx context.Context) error {
	b.mu.Lock()
	if b.busy < b.slots && len(b.waiting) == 0 {
		b.busy++
		b.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	b.waiting = append(b.waiting, ch)
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		for i, w := range b.waiting {
			if w == ch {
				b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
				return ctx.Err()
			}
		}
		// Given a slot just as ctx ended: hand it on.
		b.busy--
		b.grantLocked()
		return ctx.Err()
	}
}

// release gives a slot back.
func (b *backend) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy--
	b.grantLocked()
}

// setSlots changes the capacity; held slots above it are kept until
// released.
func (b *backend) setSlots(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots = n
	b.grantLocked()
}

func (b *backend) grantLocked() {
	for b.busy < b.slots && len(b.waiting) > 0 {
		close(b.waiting[0])
		b.waiting = b.waiting[1:]
		b.busy++
	}
}

// schedule applies the changes at their times after now; the returned
// function stops the ones not yet applied.
func (b *backend) schedule(changes cliflag.SlotChanges) (stop func()) {
	var timers []*time.Timer
	for _, c := range changes {
		timers = append(timers, time.AfterFunc(c.At, func() { b.setSlots(c.Slots) }))
	}
	return func() {
		for _, t := range timers {
			t.Stop()
		}
	}
}
