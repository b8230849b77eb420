// Package backendsim simulates an apf.Controller in front of a backend of
// limited capacity, on a fake clock, to show how the adaptive total
// (apf.Options.Adaptive) finds the backend's capacity and what a static
// total gives instead.
//
// # Model
//
// The backend has Slots slots (capacity, changed at given times by
// Config.Changes). A request admitted by the controller holds one slot for
// Config.Work; when none is free it queues inside the handler, first come
// first served, as a saturated database or CPU would: the controller
// cannot see that queue, only the longer execution times it causes.
// Config.Users users, all in one queuing priority level and distinguished
// by user, send Poisson arrivals at Config.Load times the initial capacity
// (Slots/Work per second) in all. A request waits in APF's queues at most a
// quarter of Config.Timeout (upstream's wait limit for that request
// timeout) and is goodput if its response comes within Config.Timeout of
// its arrival. The controller is a real apf.Controller with the bootstrap
// mandatory levels, its periodic borrowing adjustment on the same clock.
// Config.Noise adds seeded execution-time noise (multiplicative jitter and
// occasional stalls; MeasuredNoise resembles the shared development
// machine) to reproduce what a real clock does to the latency signal.
//
// Run is deterministic: arrivals come from a PCG seeded with Config.Seed,
// and every event (arrivals, completions, the controller's timers) runs
// from one event queue in time order, ties in scheduling order; the
// controller's Wait runs in a goroutine per request, and the driver waits
// until each arrival is decided before it goes on.
//
// "fairslice simulate --backend-slots" runs it from the command line.
package backendsim
