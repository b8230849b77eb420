package fleetsim

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const exec = time.Second

// spreadAndPinned is one spread flow and n pinned ones, each wanting more
// than the whole fleet (50 seats per replica serve global-default about 27).
func spreadAndPinned(n int) Config {
	heavy := 2.0 * 30 * float64(n) // requests per second of one second each
	flows := []Flow{{Name: "spread-0", Rate: heavy, Execution: exec, Clients: 2 * n}}
	for i := range n {
		flows = append(flows, Flow{Name: fmt.Sprintf("pinned-%d", i), Rate: heavy, Execution: exec, Pinned: true, Replica: i})
	}
	return Config{Replicas: n, ServerConcurrencyLimit: 50, Flows: flows, Duration: 30 * time.Second, Seed: 1}
}

// TestRunShowsPerReplicaFairness checks the arithmetic of per-replica
// fairness: the spread flow gets about (N+1)/2 times its fair share, the
// pinned ones about (N+1)/(2N) of theirs.
func TestRunShowsPerReplicaFairness(t *testing.T) {
	const n = 3
	res, err := Run(spreadAndPinned(n))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Flows {
		if d := f.FairShare - 1.0/(n+1); d > 1e-9 || d < -1e-9 {
			t.Errorf("flow %s FairShare = %v, want %v", f.Name, f.FairShare, 1.0/(n+1))
		}
		ratio := f.Share / f.FairShare
		want, lo, hi := 0.67, 0.55, 0.8
		if strings.HasPrefix(f.Name, "spread") {
			want, lo, hi = 2, 1.8, 2.2
		}
		if ratio < lo || ratio > hi {
			t.Errorf("flow %s Share/FairShare = %.3f, want about %v (%v to %v)", f.Name, ratio, want, lo, hi)
		}
	}
	if res.Jain > 0.9 {
		t.Errorf("Jain = %.3f, want well below 1", res.Jain)
	}
	checkAccounts(t, spreadAndPinned(n), res)
}

// checkAccounts checks what every run must satisfy: each request is
// dispatched, rejected or still waiting; no replica executes more than
// its seats; shares add up to at most 1.
func checkAccounts(t *testing.T, cfg Config, res *Result) {
	t.Helper()
	requests, rejected, share := 0, 0, 0.0
	for _, f := range res.Flows {
		if f.Dispatched+f.Rejected > f.Requests {
			t.Errorf("flow %s: %d dispatched + %d rejected > %d requests", f.Name, f.Dispatched, f.Rejected, f.Requests)
		}
		requests += f.Requests
		rejected += f.Rejected
		share += f.Share
	}
	if requests != res.Requests || rejected != res.Rejected {
		t.Errorf("flows' requests, rejected = %d, %d; fleet's %d, %d", requests, rejected, res.Requests, res.Rejected)
	}
	if share > 1+1e-9 {
		t.Errorf("shares add up to %v > 1", share)
	}
	for i, r := range res.Replicas {
		if r.Utilisation > 1+1e-9 {
			t.Errorf("replica %d Utilisation = %v > 1", i, r.Utilisation)
		}
	}
	if res.RejectedWhileIdle > res.Rejected || res.RejectedWhileServersIdle > res.Rejected {
		t.Errorf("RejectedWhileIdle = %d, RejectedWhileServersIdle = %d; want neither above Rejected = %d",
			res.RejectedWhileIdle, res.RejectedWhileServersIdle, res.Rejected)
	}
	executed := 0.0
	for _, r := range res.Replicas {
		executed += r.SeatSeconds
	}
	if want := executed / (cfg.Duration - cfg.Warmup).Seconds(); math.Abs(res.Goodput-want) > 1e-9 {
		t.Errorf("Goodput = %v, want the replicas' seat-seconds per measured second %v", res.Goodput, want)
	}
}

// TestRunServersIdleIsAgainstTheServersSeats: a replica's ServerSeats is
// the most global-default may hold under upstream's borrowing (at 50
// server seats its nominal 5 plus the 28 the other levels may lend,
// within its borrowing limit of 50), which coordination does not move though it lowers the
// idle replicas' current limits; so coordination's rejections while the
// servers idle are counted against those seats, not against its own
// limits.
func TestRunServersIdleIsAgainstTheServersSeats(t *testing.T) {
	cfg := pinnedToZero(GoAwayOff, true)
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lowered := false
	for i, r := range res.Replicas {
		if r.ServerSeats != 33 {
			t.Errorf("replica %d ServerSeats = %d, want 33", i, r.ServerSeats)
		}
		lowered = lowered || r.Seats < float64(r.ServerSeats)-1
	}
	if !lowered {
		t.Errorf("coordinated: no replica's mean current limit below its server seats: %+v", res.Replicas)
	}
	if res.RejectedWhileServersIdle <= res.RejectedWhileIdle {
		t.Errorf("coordinated: RejectedWhileServersIdle = %d, want more than RejectedWhileIdle = %d (the idle replicas' limits lowered)",
			res.RejectedWhileServersIdle, res.RejectedWhileIdle)
	}
	checkAccounts(t, cfg, res)
}

func TestRunIsDeterministic(t *testing.T) {
	cfg := spreadAndPinned(2)
	cfg.Duration = 12 * time.Second
	cfg.GoAway = GoAway{Mode: GoAwayRandom, Chance: 0.01}
	a, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("Run twice (-first +second):\n%s", d)
	}
	cfg.Seed++
	c, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(a, c) {
		t.Errorf("Run with seeds %d and %d gave the same result", cfg.Seed-1, cfg.Seed)
	}
}

// TestRunLightFlowsGetTheirDemand: flows below capacity are all served.
func TestRunLightFlowsGetTheirDemand(t *testing.T) {
	for _, b := range []Balancer{BalancerPinned, BalancerRoundRobin, BalancerLeastInflight} {
		cfg := Config{Replicas: 3, ServerConcurrencyLimit: 50, Balancer: b, Duration: 30 * time.Second, Seed: 3,
			Flows: []Flow{{Name: "a", Rate: 20, Execution: exec, Clients: 3}, {Name: "b", Rate: 10, Execution: exec, Clients: 6}}}
		res, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rejected != 0 {
			t.Errorf("%s: Rejected = %d, want 0", b, res.Rejected)
		}
		for _, f := range res.Flows {
			if r := f.Share / f.FairShare; r < 0.8 || r > 1.2 {
				t.Errorf("%s: flow %s Share/FairShare = %.3f, want about 1", b, f.Name, r)
			}
		}
		// Light load spreads evenly over the replicas by every balancer.
		t.Logf("%s: UtilisationSpread = %.3f", b, res.UtilisationSpread)
		if res.UtilisationSpread > 1.5 {
			t.Errorf("%s: UtilisationSpread = %.3f, want at most 1.5", b, res.UtilisationSpread)
		}
		checkAccounts(t, cfg, res)
	}
}

// TestRunPinnedToOneReplica: flows pinned to replica 0 are served only
// there, and its rejections happen while the rest of the fleet idles.
func TestRunPinnedToOneReplica(t *testing.T) {
	cfg := Config{Replicas: 3, ServerConcurrencyLimit: 50, Duration: 30 * time.Second, Seed: 5,
		Flows: []Flow{
			{Name: "p0", Rate: 100, Execution: exec, Pinned: true},
			{Name: "p1", Rate: 100, Execution: exec, Pinned: true},
			{Name: "light", Rate: 6, Execution: exec, Clients: 3},
		}}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int{0}, res.Flows[0].Lands); d != "" {
		t.Errorf("pinned flow Lands (-want +got):\n%s", d)
	}
	if res.RejectedWhileIdle == 0 || res.UtilisationSpread < 2 {
		t.Errorf("RejectedWhileIdle = %d, UtilisationSpread = %.3f; want rejections while idle and a spread above 2",
			res.RejectedWhileIdle, res.UtilisationSpread)
	}
	checkAccounts(t, cfg, res)

	// A targeted GOAWAY moves the pinned connections off the busy replica.
	cfg.GoAway = GoAway{Mode: GoAwayTargeted}
	moved, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if moved.GoAways == 0 || moved.RejectedWhileIdle >= res.RejectedWhileIdle || moved.UtilisationSpread >= res.UtilisationSpread {
		t.Errorf("with targeted GOAWAY: GoAways %d, RejectedWhileIdle %d, UtilisationSpread %.3f; want some, fewer than %d, below %.3f",
			moved.GoAways, moved.RejectedWhileIdle, moved.UtilisationSpread, res.RejectedWhileIdle, res.UtilisationSpread)
	}
	if d := cmp.Diff([]int{0, 1, 2}, moved.Flows[0].Lands); d != "" {
		t.Errorf("pinned flow Lands with GOAWAY (-want +got):\n%s", d)
	}
	checkAccounts(t, cfg, moved)
}

func TestRunRefusesBadConfig(t *testing.T) {
	_, err := Run(Config{Replicas: 0, Balancer: "random", GoAway: GoAway{Mode: "sometimes", Chance: 0.5}, Warmup: -1, CoordinationPeriod: -1,
		Flows: []Flow{{Name: "a", Rate: -1}, {Name: "a", Execution: exec, Pinned: true, Replica: 4, Clients: 2}}})
	if err == nil {
		t.Fatal("Run(bad config) = nil error")
	}
	for _, want := range []string{
		"Config.Replicas=0", "Config.ServerConcurrencyLimit=0", "Config.Duration=0s", `Config.Balancer="random"`,
		`Config.GoAway.Mode="sometimes"`, "Config.GoAway.Chance=0.5", "Config.Flows[0].Rate=-1",
		"Config.Flows[0].Execution=0s", `Config.Flows[1].Name="a" is not unique`, "Config.Flows[1].Clients=2",
		"Config.Flows[1].Replica=4", "Config.Warmup=-1ns", "Config.CoordinationPeriod=-1ns",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run(bad config) error does not name %q:\n%v", want, err)
		}
	}
}

func TestRunRefusesFlowOutsideLevel(t *testing.T) {
	_, err := Run(Config{Replicas: 1, ServerConcurrencyLimit: 50, Duration: time.Second, Level: "workload-low",
		Flows: []Flow{{Name: "a", Rate: 1, Execution: exec}}})
	if err == nil || !strings.Contains(err.Error(), `classified to priority level "global-default", not Config.Level "workload-low"`) {
		t.Errorf("Run(flow outside level) error = %v", err)
	}
}

// TestRunCoordinatedIsFair is issue 25's second bar: with the exchange on,
// every flow's share is within ±10% of its fair share (Jain >= 0.95),
// measured after the first two periods.
func TestRunCoordinatedIsFair(t *testing.T) {
	cfg := spreadAndPinned(3)
	cfg.Duration, cfg.Warmup, cfg.Coordinate = time.Minute, 20*time.Second, true
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Flows {
		if r := f.Share / f.FairShare; r < 0.9 || r > 1.1 {
			t.Errorf("flow %s Share/FairShare = %.3f, want 0.9 to 1.1", f.Name, r)
		}
	}
	if res.Jain < 0.95 {
		t.Errorf("Jain = %.3f, want at least 0.95", res.Jain)
	}
	checkAccounts(t, cfg, res)
}

// TestRunCoordinatedFleetOfOne: a replica without peers decides as
// without coordination, to the request.
func TestRunCoordinatedFleetOfOne(t *testing.T) {
	cfg := spreadAndPinned(1)
	cfg.Duration = 35 * time.Second
	alone, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Coordinate = true
	coordinated, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(alone, coordinated); d != "" {
		t.Errorf("one replica, uncoordinated (-) and coordinated (+):\n%s", d)
	}
}

// pinnedToZero is the CLI's "fleet --replicas 3 --spread 0 --pinned-to 0
// --light 3": three heavy flows on one connection each, all opened on
// replica 0, and three light flows spread over the fleet, 60 s of which
// the last 40 are measured.
func pinnedToZero(mode GoAwayMode, coordinate bool) Config {
	var flows []Flow
	for i := range 3 {
		flows = append(flows, Flow{Name: fmt.Sprintf("pinned-%d", i), Rate: 180, Execution: exec, Pinned: true})
	}
	for i := range 3 {
		flows = append(flows, Flow{Name: fmt.Sprintf("light-%d", i), Rate: 3.125, Execution: exec, Clients: 3})
	}
	return Config{Replicas: 3, ServerConcurrencyLimit: 50, Flows: flows, Duration: time.Minute, Warmup: 20 * time.Second, Seed: 1,
		GoAway: GoAway{Mode: mode}, Coordinate: coordinate}
}

// TestRunTargetedSteeringBeatsRandom is the steering matrix's bar on
// its first cell, in the same run: with every pinned flow on one replica,
// targeted GOAWAY rejects at most 10% (+5) more requests while the
// servers' seats idle than the better of upstream's random GOAWAY at
// 0.001 and 0.02, keeps Jain's index at 0.95 or more, serves at least 97%
// of the best goodput and closes fewer connections than random 0.02;
// uncoordinated and coordinated. GOAWAY off must miss the rejections bar,
// so that the scenario tests something.
func TestRunTargetedSteeringBeatsRandom(t *testing.T) {
	for _, coordinate := range []bool{false, true} {
		run := func(mode GoAwayMode, chance float64) *Result {
			cfg := pinnedToZero(mode, coordinate)
			cfg.GoAway.Chance = chance
			res, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// No replica executes more than its seats, coordinated too: the
			// Coordinator holds the fleet's limits through each adjustment.
			checkAccounts(t, cfg, res)
			return res
		}
		off, r1, r20, tg := run(GoAwayOff, 0), run(GoAwayRandom, 0.001), run(GoAwayRandom, 0.02), run(GoAwayTargeted, 0)
		t.Logf("coordinate=%v: rejected while the servers idle, goodput, Jain, GOAWAYs: off %d %.1f %.3f %d; random 0.001 %d %.1f %.3f %d; random 0.02 %d %.1f %.3f %d; targeted %d %.1f %.3f %d",
			coordinate, off.RejectedWhileServersIdle, off.Goodput, off.Jain, off.GoAways, r1.RejectedWhileServersIdle, r1.Goodput, r1.Jain, r1.GoAways,
			r20.RejectedWhileServersIdle, r20.Goodput, r20.Jain, r20.GoAways, tg.RejectedWhileServersIdle, tg.Goodput, tg.Jain, tg.GoAways)
		better := min(r1.RejectedWhileServersIdle, r20.RejectedWhileServersIdle)
		bar := func(rejected int) bool { return float64(rejected) <= 1.1*float64(better)+5 }
		best := max(off.Goodput, r1.Goodput, r20.Goodput, tg.Goodput)
		if bar(off.RejectedWhileServersIdle) {
			t.Errorf("coordinate=%v: GOAWAY off rejected %d while the servers idled, within the bar of the better random's %d: the scenario tests nothing", coordinate, off.RejectedWhileServersIdle, better)
		}
		if !bar(tg.RejectedWhileServersIdle) {
			t.Errorf("coordinate=%v: targeted rejected %d while the servers idled, want at most 10%% (+5) over the better random's %d", coordinate, tg.RejectedWhileServersIdle, better)
		}
		if tg.Jain < 0.95 {
			t.Errorf("coordinate=%v: targeted Jain = %.3f, want at least 0.95", coordinate, tg.Jain)
		}
		if tg.Goodput < 0.97*best {
			t.Errorf("coordinate=%v: targeted goodput = %.1f, want at least 97%% of the best, %.1f", coordinate, tg.Goodput, best)
		}
		if tg.GoAways >= r20.GoAways {
			t.Errorf("coordinate=%v: targeted closed %d connections, want fewer than random 0.02's %d", coordinate, tg.GoAways, r20.GoAways)
		}
	}
}

// TestRunCapsWaitServeMore: with caps that make a flow wait instead of
// refusing it, the coordinated pinned scenario serves more seat-seconds
// and rejects fewer requests than with caps that refuse, seed by seed,
// and every account still adds up.
func TestRunCapsWaitServeMore(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		cfg := pinnedToZero(GoAwayTargeted, true)
		cfg.Seed = seed
		refusing, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.CapsWait = true
		waiting, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: goodput %.2f refusing, %.2f waiting; rejected %d, %d", seed, refusing.Goodput, waiting.Goodput, refusing.Rejected, waiting.Rejected)
		if waiting.Goodput <= refusing.Goodput || waiting.Rejected >= refusing.Rejected {
			t.Errorf("seed %d: caps that wait: goodput %.2f, rejected %d; want more than refusing caps' %.2f and fewer than %d",
				seed, waiting.Goodput, waiting.Rejected, refusing.Goodput, refusing.Rejected)
		}
		checkAccounts(t, cfg, waiting)
	}
}

// TestRunCapsWaitIsDeterministic: with caps that hold requests, as
// without, the same Config gives the same Result, run after run. Small
// replicas under heavy pinned flows, coordinated with targeted GOAWAY,
// have the caps of several flows holding requests rise in one round.
func TestRunCapsWaitIsDeterministic(t *testing.T) {
	cfg := spreadAndPinned(3)
	cfg.ServerConcurrencyLimit = 10
	for i := range cfg.Flows {
		cfg.Flows[i].Rate /= 5
	}
	cfg.Balancer, cfg.GoAway, cfg.Coordinate, cfg.CapsWait = BalancerPinned, GoAway{Mode: GoAwayTargeted}, true, true
	cfg.Duration, cfg.Warmup = 30*time.Second, 7500*time.Millisecond
	first, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(first, res); d != "" {
			t.Fatalf("run %d (-first +this):\n%s", i+2, d)
		}
	}
}

// TestRunClosedLoopHoldsItsWorkers: a closed loop of 3 workers on a
// replica with seats to spare keeps exactly 3 requests executing: each
// worker sends its next request when the last one ends, so over the 8
// measured seconds of 1 s requests it sends 24 and executes 24
// seat-seconds, and its demand is its 3 workers' seats.
func TestRunClosedLoopHoldsItsWorkers(t *testing.T) {
	res, err := Run(Config{Replicas: 1, ServerConcurrencyLimit: 50, Duration: 10 * time.Second, Warmup: 2 * time.Second,
		Flows: []Flow{{Name: "loop", Rate: 1000, Execution: time.Second, Workers: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Flows[0]
	got := []float64{float64(f.Requests), f.SeatSeconds, f.Demand}
	if d := cmp.Diff([]float64{24, 24, 3}, got); d != "" {
		t.Errorf("requests, seat-seconds, demand (-want +got):\n%s", d)
	}
	if _, err := Run(Config{Replicas: 1, ServerConcurrencyLimit: 50, Duration: time.Second,
		Flows: []Flow{{Name: "loop", Execution: time.Second, Workers: -1}}}); err == nil || !strings.Contains(err.Error(), "Workers=-1") {
		t.Errorf("Workers -1: error %v, want one naming Workers=-1", err)
	}
}
