package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/kube/fleetlease"
	"github.com/fairslice/fairslice/kube/verify/internal/realapiserver"
)

// The fleet e2e test's sizes: 3 replicas of 12 seats (global-default
// borrows most of them), requests of one seat
// that execute 200 ms, a round every second.
const (
	fleetReplicas = 3
	fleetServerCL = 12
	fleetExec     = 200 * time.Millisecond
	fleetPeriod   = time.Second
	fleetWorkers  = 12 // per heavy flow and replica: more demand than a replica has
)

// outageProxy forwards TCP to the API server; while down it drops every
// connection it carries and holds new ones unanswered, as a partition
// would, so that a store call hangs until its timeout.
type outageProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func startOutageProxy(t *testing.T, target string) *outageProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &outageProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setDown(false)
		p.closeAll()
	})
	return p
}

func (p *outageProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		down := p.down
		p.mu.Unlock()
		if down {
			continue // held, unanswered, until the outage ends
		}
		go p.forward(c)
	}
}

func (p *outageProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

func (p *outageProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// setDown starts (true) or ends an outage; either way the connections
// open are closed.
func (p *outageProxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	p.closeAll()
}

// fleetReplica is one apf server: a controller, optionally coordinated,
// behind net/http on loopback.
type fleetReplica struct {
	name string
	c    *apf.Controller
	co   *fleet.Coordinator
	srv  *httptest.Server
}

func startFleetReplica(t *testing.T, name string, store fleet.Store, served *flowCounts) *fleetReplica {
	t.Helper()
	return startFleetReplicaWith(t, name, store, served, fleetReplicaOptions{})
}

// fleetReplicaOptions are what the GOAWAY test varies of a replica.
type fleetReplicaOptions struct {
	goAway    *apf.TargetedGoAway // the Coordinator's and the Handler's (with a store)
	chance    float64             // upstream's --goaway-chance filter around the handler
	http2     bool                // serve HTTP/2 over TLS
	executing *atomic.Int64       // counts the executions in progress
}

func startFleetReplicaWith(t *testing.T, name string, store fleet.Store, served *flowCounts, o fleetReplicaOptions) *fleetReplica {
	t.Helper()
	r := &fleetReplica{name: name}
	var c *apf.Controller
	var err error
	if store != nil {
		// A store call may hang for 5 s in the outage: far longer than
		// any request may take, so that one waiting on it would show.
		c, r.co, err = fleet.Join(nil, apf.Options{ServerConcurrencyLimit: fleetServerCL},
			fleet.CoordinatorConfig{Replica: name, Store: store, Period: fleetPeriod, Timeout: 5 * time.Second, GoAway: o.goAway})
	} else {
		c, err = apf.New(nil, apf.Options{ServerConcurrencyLimit: fleetServerCL, AdjustPeriod: fleetPeriod})
	}
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	work := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if o.executing != nil {
			o.executing.Add(1)
			defer o.executing.Add(-1)
		}
		time.Sleep(fleetExec)
		served.add(req.Header.Get(apf.HeaderRemoteUser))
	})
	h, err := c.Handler(work, apf.HandlerOptions{User: apf.RequestHeaderUser, DefaultWaitLimit: time.Second, GoAway: o.goAway})
	if err != nil {
		t.Fatal(err)
	}
	if o.chance > 0 {
		h = genericfilters.WithProbabilisticGoaway(h, o.chance)
	}
	r.srv = httptest.NewUnstartedServer(h)
	if o.http2 {
		r.srv.EnableHTTP2 = true
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	if r.co != nil {
		r.co.Start()
	}
	return r
}

func (r *fleetReplica) stop() {
	if r.co != nil {
		r.co.Close()
	}
	r.srv.CloseClientConnections()
	r.srv.Close()
	r.c.Close()
}

// flowCounts counts the requests served per user while counting is on.
type flowCounts struct {
	mu     sync.Mutex
	on     bool
	counts map[string]int
}

func (f *flowCounts) add(user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on {
		f.counts[user]++
	}
}

// measure counts for d and returns each flow's share of what was served.
func (f *flowCounts) measure(d time.Duration) map[string]float64 {
	f.mu.Lock()
	f.on, f.counts = true, map[string]int{}
	f.mu.Unlock()
	time.Sleep(d)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = false
	total := 0
	for _, n := range f.counts {
		total += n
	}
	out := map[string]float64{}
	for u, n := range f.counts {
		out[u] = float64(n) / float64(max(total, 1))
	}
	return out
}

// fleetLoad runs the clients: "noisy", a tenant whose clients reach every
// replica, and "quiet-i", each on one long-lived connection to replica i;
// all want more than the fleet has. Each request's latency is recorded.
type fleetLoad struct {
	urls    []atomic.Pointer[string]
	stop    chan struct{}
	wg      sync.WaitGroup
	slowest atomic.Int64 // ns, of a request answered
	errs    atomic.Int64 // requests that got no answer (a replica down)
}

func startFleetLoad(replicas []*fleetReplica) *fleetLoad {
	l := &fleetLoad{urls: make([]atomic.Pointer[string], len(replicas)), stop: make(chan struct{})}
	for i, r := range replicas {
		l.point(i, r)
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4 * fleetWorkers}}
	for i := range replicas {
		for _, user := range []string{"noisy", fmt.Sprint("quiet-", i)} {
			for range fleetWorkers {
				l.wg.Add(1)
				go l.worker(client, i, user)
			}
		}
	}
	return l
}

func (l *fleetLoad) point(i int, r *fleetReplica) {
	u := r.srv.URL + "/api/v1/namespaces/default/configmaps/x"
	l.urls[i].Store(&u)
}

func (l *fleetLoad) worker(client *http.Client, replica int, user string) {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		req, _ := http.NewRequest("GET", *l.urls[replica].Load(), nil)
		req.Header.Set(apf.HeaderRemoteUser, user)
		req.Header.Set(apf.HeaderRemoteGroup, "system:authenticated")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			l.errs.Add(1)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if d := time.Since(start); int64(d) > l.slowest.Load() {
			l.slowest.Store(int64(d))
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (l *fleetLoad) halt() {
	close(l.stop)
	l.wg.Wait()
}

// fairness is the noisy flow's share over its fair share, a quarter of
// the fleet (four heavy flows, the noisy one anywhere, each quiet one on
// its replica: max-min gives each 3C/4 of 3C), and the quiet flows'
// least and most.
func fairness(shares map[string]float64) (noisy, quietMin, quietMax float64) {
	const fair = 1.0 / (fleetReplicas + 1)
	quietMin, quietMax = 10, 0
	for i := range fleetReplicas {
		q := shares[fmt.Sprint("quiet-", i)] / fair
		quietMin, quietMax = min(quietMin, q), max(quietMax, q)
	}
	return shares["noisy"] / fair, quietMin, quietMax
}

// TestFleetCoordinationThroughLeases: three apf servers share Leases on
// one real API server. Uncoordinated, the noisy tenant, whose clients
// reach all three, takes about (N+1)/2 times its fair share; coordinated
// through the Leases every flow gets about its share. A replica killed
// and restarted mid-run rejoins; through a 30 s outage of the API server
// the replicas fall back to deciding alone and no request waits on the
// store; afterwards the shares hold again.
func TestFleetCoordinationThroughLeases(t *testing.T) {
	srv := realapiserver.Start(t, realapiserver.Options{})
	host, err := url.Parse(srv.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startOutageProxy(t, host.Host)
	cfg := rest.CopyConfig(srv.Config)
	cfg.Host = "https://" + proxy.ln.Addr().String()
	cfg.Timeout = 5 * time.Second
	leases, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	store, err := fleetlease.New(fleetlease.Config{Client: leases.CoordinationV1(), Namespace: "default", Fleet: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	served := &flowCounts{}
	const warmup, window = 4 * time.Second, 6 * time.Second

	run := func(coordinated bool) ([]*fleetReplica, *fleetLoad) {
		var st fleet.Store
		if coordinated {
			st = store
		}
		var rs []*fleetReplica
		for i := range fleetReplicas {
			rs = append(rs, startFleetReplica(t, fmt.Sprint("replica-", i), st, served))
		}
		return rs, startFleetLoad(rs)
	}
	report := func(phase string, shares map[string]float64) float64 {
		noisy, qmin, qmax := fairness(shares)
		t.Logf("%s: noisy %.2f× its fair share, quiet %.2f–%.2f× (shares %v)", phase, noisy, qmin, qmax, shares)
		return noisy
	}

	// Uncoordinated.
	rs, load := run(false)
	time.Sleep(warmup)
	t.Logf("global-default's seats on replica 0: %d, for %d workers", rs[0].c.Limits()["global-default"].Current, 2*fleetWorkers)
	if noisy := report("uncoordinated", served.measure(window)); noisy < 1.5 {
		t.Errorf("uncoordinated: the noisy flow got %.2f× its fair share, want at least 1.5× (about (N+1)/2 = 2)", noisy)
	}
	load.halt()
	for _, r := range rs {
		r.stop()
	}

	// Coordinated through the Leases.
	rs, load = run(true)
	defer func() {
		load.halt()
		for _, r := range rs {
			r.stop()
		}
	}()
	time.Sleep(warmup)
	check := func(phase string) {
		t.Helper()
		shares := served.measure(window)
		noisy, qmin, qmax := fairness(shares)
		report(phase, shares)
		if noisy < 0.75 || noisy > 1.25 || qmin < 0.75 || qmax > 1.25 {
			t.Errorf("%s: shares over fair share noisy %.2f, quiet %.2f–%.2f; want each within ±25%%", phase, noisy, qmin, qmax)
		}
	}
	check("coordinated")
	for i, r := range rs {
		if r.co.Peers() != fleetReplicas-1 {
			t.Errorf("replica %d decides with %d peers, want %d", i, r.co.Peers(), fleetReplicas-1)
		}
	}

	// Replica 1 killed and restarted under the same name.
	rs[1].stop()
	time.Sleep(2 * time.Second)
	rs[1] = startFleetReplica(t, "replica-1", store, served)
	load.point(1, rs[1])
	time.Sleep(warmup)
	check("after replica-1 restarted")

	// The API server unreachable for 30 s.
	load.slowest.Store(0)
	proxy.setDown(true)
	outage := time.Now()
	shares := served.measure(30 * time.Second)
	report("API server unreachable (the last 30 s)", shares)
	slowest := time.Duration(load.slowest.Load())
	for i, r := range rs {
		if r.co.Peers() != 0 {
			t.Errorf("replica %d still decides with %d peers after %v without the API server, want 0 (alone)", i, r.co.Peers(), time.Since(outage))
		}
	}
	proxy.setDown(false)
	// A request's wait limit is 1 s and its execution 200 ms; a store
	// call in the outage hangs for 5 s.
	if slowest > 2500*time.Millisecond {
		t.Errorf("slowest request during the outage took %v; want under 2.5 s (a store call hangs 5 s)", slowest)
	}
	t.Logf("slowest request answered during the outage: %v; requests with no answer in the run: %d", slowest, load.errs.Load())
	time.Sleep(warmup + 2*time.Second)
	check("after the outage")
	if load.errs.Load() == 0 {
		t.Log("no request went unanswered (the restart's downtime included)")
	}
}
