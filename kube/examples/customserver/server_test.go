package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServerUsesFairsliceFlowControl runs the program's server on a free
// port and checks that a tenant's request is classified by the demo
// FlowSchema (its real UID in the response header), that another user
// falls to the catch-all, and that fairslice's debug endpoints answer.
func TestServerUsesFairsliceFlowControl(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	client, err := flowcontrolSource("")
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- serve(ctx, l, client, 60) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not return within 30s of cancel")
		}
	}()
	base := "http://" + l.Addr().String()
	get := func(path, user, group string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if user != "" {
			req.Header.Set("X-Remote-User", user)
			req.Header.Add("X-Remote-Group", group)
		}
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	const tenantsFS = "66666666-7777-8888-9999-000000000000"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body := get("/hello", "alice", "tenants")
		if resp != nil && resp.StatusCode == 200 && resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == tenantsFS {
			if body != "hello\n" {
				t.Errorf("GET /hello = %q, want hello", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /hello as a tenant: %v %q, want 200 with FlowSchema UID %s within 30s", resp, body, tenantsFS)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, _ := get("/hello", "bob", "others")
	if resp == nil || resp.StatusCode != 200 || resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == tenantsFS {
		t.Errorf("GET /hello as bob: %v, want 200 classified elsewhere than tenants", resp)
	}
	resp, body := get("/debug/api_priority_and_fairness/dump_priority_levels", "", "")
	if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, "tenants") {
		t.Errorf("dump_priority_levels: %v %q, want 200 listing tenants", resp, body)
	}
}
