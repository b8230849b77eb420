package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/internal/loadtest"
)

// tourTenants is the end-to-end test's configuration: one level of 64
// queues (hand 1: a queue per flow) for group tenants, 4 of 6 seats.
const tourTenants = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenants}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 1, queueLengthLimit: 128}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: tenants}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

// apfSection serves a 25 ms handler on loopback behind apf's middleware
// and, for comparison, behind a plain limit of 4 concurrent requests with
// one first-come first-served line, and drives each for one second with a
// noisy user (120 requests in flight, wanting every seat) and four quiet
// ones, each paced at 16 requests a second (0.4 seat, under its fair
// share of 0.8) with at most 4 in flight: the end-to-end test's load.
// These numbers are measured live, so they vary from run to run and
// machine to machine; BENCHMARKS.md has the end-to-end test's.
func apfSection(w io.Writer) error {
	const work = 25 * time.Millisecond
	cfg, err := flowschema.Decode([]byte(tourTenants))
	if err != nil {
		return err
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 6})
	if err != nil {
		return err
	}
	defer c.Close()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t, ok := apf.TicketFromContext(r.Context()); ok {
			w.Header().Set(loadtest.HeaderWait, strconv.FormatFloat(t.WaitTime().Seconds(), 'f', -1, 64))
		}
		time.Sleep(work)
	})
	withAPF, err := c.Handler(handler, apf.HandlerOptions{User: apf.RequestHeaderUser})
	if err != nil {
		return err
	}
	sem := make(chan struct{}, 4)
	fifo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		sem <- struct{}{}
		defer func() { <-sem }()
		w.Header().Set(loadtest.HeaderWait, strconv.FormatFloat(time.Since(t0).Seconds(), 'f', -1, 64))
		handler(w, r)
	})
	users := []loadtest.User{{Name: "noisy", Groups: []string{"tenants"}, Concurrency: 120}}
	for i := 1; i <= 4; i++ {
		users = append(users, loadtest.User{Name: fmt.Sprint("quiet-", i), Groups: []string{"tenants"}, Concurrency: 4, Rate: 16})
	}
	for _, run := range []struct {
		name string
		h    http.Handler
	}{{"APF (apf.Controller.Handler)", withAPF}, {"no APF (4 seats, one FIFO line)", fifo}} {
		rep, err := serveAndDrive(run.h, users, work)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s, 1 s of load, %v per request:\n", run.name, work)
		if err := rep.Write(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "With APF each quiet user asks for less than its fair share and gets all of it, waiting")
	fmt.Fprintln(w, "about a service time; the noisy user gets the rest. Behind one line the quiet users wait")
	fmt.Fprintln(w, "behind the noisy user's backlog and get a fraction of what they offer.")
	fmt.Fprintln(w, "(Measured live on loopback, unlike the sections above: the numbers vary between runs.)")
	return nil
}

func serveAndDrive(h http.Handler, users []loadtest.User, work time.Duration) (loadtest.Report, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return loadtest.Report{}, err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	return loadtest.Run(context.Background(), loadtest.Config{URL: "http://" + ln.Addr().String(), Users: users, Duration: time.Second, Work: work})
}
