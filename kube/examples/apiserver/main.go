// Command apiserver is a runnable example of package apf: an HTTP server
// that answers Kubernetes-style API requests behind API Priority and
// Fairness, with upstream's Prometheus metrics, and a load generator that
// drives it.
//
// Serve:
//
//	go run ./examples/apiserver --listen 127.0.0.1:8080 --server-concurrency N|auto [--config FILE] [--work 20ms] [--trusted-proxy]
//		[--backend-slots N] [--backend-slots-at T=N]...
//
// It answers every /api/... and /apis/... request with 200 after holding
// its seat for --work; /healthz, /livez and /readyz with "ok" (exempt in
// the bootstrap configuration: FlowSchema probes); /metrics with the
// apiserver_flowcontrol_* series (package apfmetrics); and the debug
// endpoints under /debug/api_priority_and_fairness/. Beside upstream's
// series, /metrics has fairslice_apf_total_seats, the total divided among
// the priority levels now (with auto, the adaptive total).
//
// --server-concurrency auto turns on the adaptive total
// (apf.Options.Adaptive, ceiling 600): the seats follow the API requests'
// execution times. To see it work, --backend-slots N puts a backend of N
// slots behind the API handler: each request holds one slot for --work,
// queueing inside the handler when none is free, as a saturated database
// or CPU would; --backend-slots-at T=N changes the capacity to N at T
// after the start (repeatable), for example halving it. It logs one line when
// ready, and on an interrupt drains: the HTTP server first, then the
// controller (apf.Controller.Shutdown).
//
// Identity: the Kubernetes request-header convention (X-Remote-User, one
// X-Remote-Group header per group; no user means system:anonymous). Those
// headers authenticate nobody, so unless --trusted-proxy says an
// authenticating proxy sets them, a request naming a reserved identity
// (system:masters and every other system: user or group) is refused with
// 403: no client makes itself exempt.
//
// With --config it reads FlowSchemas and PriorityLevelConfigurations from
// Kubernetes YAML or JSON (refusing what the API server would refuse, and
// logging what it would ignore); without, upstream's bootstrap
// configuration.
//
// Drive it (a noisy user and quiet users, all authenticated, so
// global-default with the defaults):
//
//	go run ./examples/apiserver --load http://127.0.0.1:8080 [--duration 10s] [--noisy 64] [--quiet 4] [--quiet-rate 5] [--quiet-concurrency 4]
//
// Each quiet user sends --quiet-rate requests a second (at most
// --quiet-concurrency in flight; --quiet-rate 0 keeps them in flight back
// to back, which makes them heavy users too). It prints per user the
// requests offered (paced users), sent, served and answered 429, the
// served rate and the wait percentiles the server reports; then per user
// the goodput (served within --duration, per second) and the latency
// percentiles p50 and p99; then the quiet users' median wait next to the
// noisy user's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/internal/loadtest"
	"github.com/fairslice/fairslice/kube/apfmetrics"
	"github.com/fairslice/fairslice/kube/internal/cliflag"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	serverCL := cliflag.Concurrency{N: 600}
	flag.Var(&serverCL, "server-concurrency", "server concurrency limit in seats, or auto for the adaptive total")
	slots := flag.Int("backend-slots", 0, "API requests share a backend of `N` slots (0: none)")
	var changes cliflag.SlotChanges
	flag.Var(&changes, "backend-slots-at", "the backend's slots become N at `T=N` after the start (repeatable)")
	config := flag.String("config", "", "FlowSchemas and PriorityLevelConfigurations (YAML or JSON); default the bootstrap configuration")
	work := flag.Duration("work", 20*time.Millisecond, "how long each API request holds its seat")
	trusted := flag.Bool("trusted-proxy", false, "an authenticating proxy sets X-Remote-User and X-Remote-Group: accept reserved identities from them")
	load := flag.String("load", "", "run the load generator against this base URL instead of serving")
	duration := flag.Duration("duration", 10*time.Second, "load: how long to drive the server")
	noisy := flag.Int("noisy", 64, "load: requests the noisy user keeps in flight")
	quiet := flag.Int("quiet", 4, "load: number of quiet users")
	quietConc := flag.Int("quiet-concurrency", 4, "load: most requests each quiet user has in flight")
	quietRate := flag.Float64("quiet-rate", 5, "load: requests per second each quiet user sends; 0: back to back")
	path := flag.String("path", "/api/v1/namespaces/default/pods", "load: path to request")
	flag.Parse()

	if *load != "" {
		if _, err := drive(os.Stdout, *load, *path, *duration, *work, *noisy, *quiet, *quietConc, *quietRate); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := serve(*listen, serverConfig{concurrency: serverCL, configFile: *config, work: *work, trusted: *trusted,
		slots: *slots, changes: changes}); err != nil {
		log.Fatal(err)
	}
}

// TotalSeatsMetric is the gauge on /metrics of apf.Controller.Total.
const TotalSeatsMetric = "fairslice_apf_total_seats"

// server is the example's controller and handler.
type server struct {
	c       *apf.Controller
	handler http.Handler
	source  string
	backend *backend // nil without --backend-slots
}

// serverConfig is what the serving flags say.
type serverConfig struct {
	concurrency cliflag.Concurrency
	configFile  string
	work        time.Duration
	trusted     bool
	slots       int
	changes     cliflag.SlotChanges
}

// newServer builds the controller, its metrics in reg, and the handler of
// every path.
func newServer(serverCL int, configFile string, work time.Duration, trusted bool, reg *prometheus.Registry) (*server, error) {
	return newServerWith(serverConfig{concurrency: cliflag.Concurrency{N: serverCL}, configFile: configFile, work: work, trusted: trusted}, reg)
}

// newServerWith is newServer with the adaptive total and the backend.
func newServerWith(sc serverConfig, reg *prometheus.Registry) (*server, error) {
	objects, source, err := loadObjects(sc.configFile)
	if err != nil {
		return nil, err
	}
	c, err := newController(sc, objects, source, reg)
	if err != nil {
		return nil, err
	}
	var be *backend
	if sc.slots > 0 {
		be = newBackend(sc.slots)
	}
	mux, err := routes(c, apiHandler(sc.work, be), sc.trusted)
	if err != nil {
		c.Close()
		return nil, err
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	c.InstallDebug(mux)
	return &server{c: c, handler: mux, source: source, backend: be}, nil
}

// loadObjects reads the FlowSchemas and priority levels of configFile, or
// none ("" : the bootstrap configuration), and names their source.
func loadObjects(configFile string) (*flowschema.Config, string, error) {
	if configFile == "" {
		return nil, "bootstrap configuration", nil
	}
	data, err := os.ReadFile(configFile)
	if err != nil {
		return nil, "", err
	}
	objects, err := flowschema.Decode(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", configFile, err)
	}
	return objects, configFile, nil
}

// newController builds the APF controller with its metrics on reg, and
// logs the configuration's findings.
func newController(sc serverConfig, objects *flowschema.Config, source string, reg *prometheus.Registry) (*apf.Controller, error) {
	serverCL := sc.concurrency.N
	if sc.concurrency.Auto {
		serverCL = 600 // the ceiling: upstream's default total
	}
	m, err := apfmetrics.New(reg)
	if err != nil {
		return nil, err
	}
	opts := apf.StandaloneOptions(serverCL) // not a Kubernetes API server: every upstream fix on
	opts.Observer = m
	if sc.concurrency.Auto {
		opts.Adaptive = &apf.AdaptiveOptions{}
	}
	c, err := apf.New(objects, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	m.Attach(c)
	// The total outside upstream's metrics, so that the adaptive total
	// can be watched from outside (the harness in adaptive_test.go does).
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: TotalSeatsMetric,
		Help: "Seats divided among the priority levels: --server-concurrency, or with auto the adaptive total now"},
		func() float64 { return float64(c.Total()) })); err != nil {
		c.Close()
		return nil, err
	}
	for _, f := range c.Findings() {
		log.Printf("apiserver: %s: %s", source, f)
	}
	return c, nil
}

// apiHandler answers every API request with a Status after work (or
// once a backend slot frees and then work), reporting the APF wait.
func apiHandler(work time.Duration, be *backend) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t, ok := apf.TicketFromContext(r.Context()); ok {
			w.Header().Set(loadtest.HeaderWait, strconv.FormatFloat(t.WaitTime().Seconds(), 'f', -1, 64))
		}
		if be != nil {
			if be.acquire(r.Context()) != nil {
				return
			}
			defer be.release()
		}
		select {
		case <-time.After(work):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	})
}

// routes puts the API and the probes behind c's handler (refusing
// reserved identities unless trusted).
func routes(c *apf.Controller, api http.Handler, trusted bool) (*http.ServeMux, error) {
	probe := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux := http.NewServeMux()
	for _, route := range []struct {
		path string
		h    http.Handler
	}{{"/api/", api}, {"/apis/", api}, {"/healthz", probe}, {"/livez", probe}, {"/readyz", probe}} {
		limited, err := c.Handler(route.h, apf.HandlerOptions{User: apf.RequestHeaderUser})
		if err != nil {
			return nil, err
		}
		if !trusted {
			limited = apf.RefuseReservedIdentities(limited)
		}
		mux.Handle(route.path, limited)
	}
	return mux, nil
}

func serve(listen string, sc serverConfig) error {
	if sc.slots < 0 || (len(sc.changes) > 0 && sc.slots == 0) {
		return fmt.Errorf("--backend-slots=%d: want a positive number of slots (required by --backend-slots-at)", sc.slots)
	}
	s, err := newServerWith(sc, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	if s.backend != nil {
		defer s.backend.schedule(sc.changes)()
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		s.c.Close()
		return err
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		// The HTTP server first: it stops accepting and waits for the
		// handlers in progress, queued requests included; then the
		// controller ends whatever is left when the time is up.
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		_ = s.c.Shutdown(shutdown)
	}()
	log.Printf("apiserver: serving on http://%s (server concurrency %s, %s, work %v, backend slots %d %v)",
		ln.Addr(), &sc.concurrency, s.source, sc.work, sc.slots, &sc.changes)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		s.c.Close()
		return err
	}
	<-drained
	return nil
}

func drive(out io.Writer, url, path string, duration, work time.Duration, noisy, quiet, quietConc int, quietRate float64) (*loadtest.Report, error) {
	// No groups: the server adds system:authenticated to every named
	// user, and refuses a client that sends a system: group itself.
	users := []loadtest.User{{Name: "noisy", Concurrency: noisy}}
	for i := 1; i <= quiet; i++ {
		users = append(users, loadtest.User{Name: fmt.Sprintf("quiet-%d", i), Concurrency: quietConc, Rate: quietRate})
	}
	rep, err := loadtest.Run(context.Background(), loadtest.Config{URL: url, Path: path, Users: users, Duration: duration, Work: work})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%d users for %v against %s%s:\n", len(users), duration, url, path)
	if err := rep.Write(out); err != nil {
		return nil, err
	}
	fmt.Fprintln(out)
	if err := rep.WriteGoodput(out); err != nil {
		return nil, err
	}
	_, err = fmt.Fprintln(out, summary(&rep))
	return &rep, err
}

// summary puts the quiet users' median wait next to the noisy user's.
func summary(rep *loadtest.Report) string {
	var quiet []time.Duration
	for _, u := range rep.Users {
		if u.Name != "noisy" {
			quiet = append(quiet, u.Waits...)
		}
	}
	slices.Sort(quiet)
	all := loadtest.UserResult{Waits: quiet}
	n := rep.User("noisy")
	if n == nil {
		return "no noisy user"
	}
	return fmt.Sprintf("median wait: quiet users %v (p99 %v), noisy user %v (p99 %v)",
		all.Percentile(50).Round(10*time.Microsecond), all.Percentile(99).Round(10*time.Microsecond),
		n.Percentile(50).Round(10*time.Microsecond), n.Percentile(99).Round(10*time.Microsecond))
}
