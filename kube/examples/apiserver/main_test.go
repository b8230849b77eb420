package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairslice/fairslice/apf"
)

func get(t *testing.T, url string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The example serves what its doc and the README say: exempt probes,
// upstream's metrics, no exemption by header, and a load report that puts
// the quiet users' wait next to the noisy user's.
func TestExampleServer(t *testing.T) {
	s, err := newServer(8, "", time.Millisecond, false, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler)
	defer func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.c.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	}()

	exempt := s.c.Classify(&apf.Request{User: apf.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		Info: apf.RequestInfo{Verb: "get", Path: "/healthz"}})
	resp, body := get(t, ts.URL+"/healthz", nil)
	if resp.StatusCode != 200 || strings.TrimSpace(body) != "ok" || !exempt.Exempt ||
		resp.Header.Get(apf.HeaderPriorityLevelUID) != exempt.PriorityLevelUID {
		t.Errorf("GET /healthz: %d %q, priority level UID %q; want 200 ok from the exempt level (%q)",
			resp.StatusCode, body, resp.Header.Get(apf.HeaderPriorityLevelUID), exempt.PriorityLevelUID)
	}

	resp, _ = get(t, ts.URL+"/api/v1/namespaces/default/pods", http.Header{"X-Remote-User": {"mallory"}, "X-Remote-Group": {"system:masters"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("request claiming system:masters: status %d, want 403", resp.StatusCode)
	}

	var out strings.Builder
	rep, err := drive(&out, ts.URL, "/api/v1/namespaces/default/pods", 300*time.Millisecond, time.Millisecond, 8, 2, 2, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range rep.Users {
		if u.Served == 0 || u.Errors > 0 {
			t.Errorf("load: user %s served %d, errors %d; want some served and no errors", u.Name, u.Served, u.Errors)
		}
	}
	if !strings.Contains(out.String(), "latency p99") {
		t.Errorf("load report:\n%s\nwant the goodput and latency table", out.String())
	}
	if !strings.Contains(out.String(), "median wait: quiet users") || !strings.Contains(out.String(), "noisy user") {
		t.Errorf("load report lacks the wait summary:\n%s", out.String())
	}

	_, metrics := get(t, ts.URL+"/metrics", nil)
	for _, series := range []string{
		`apiserver_flowcontrol_dispatched_requests_total{flow_schema="global-default",priority_level="global-default"}`,
		`apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"}`,
		`apiserver_flowcontrol_request_wait_duration_seconds_bucket`,
		TotalSeatsMetric + " 8\n",
	} {
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}
