package slicecache

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fairslice/fairslice/slicer"
	"github.com/google/go-cmp/cmp"
)

func mkSlice(name, svc, rv string, ports []slicer.Port, eps ...slicer.Endpoint) *Slice {
	return &Slice{ResourceVersion: rv, Slice: slicer.Slice{
		Name: name, Namespace: "ns", AddressType: slicer.IPv4, Ports: ports, Endpoints: eps,
		Labels: map[string]string{slicer.LabelServiceName: svc},
	}}
}

func ep(addr string, ready, terminating slicer.Tristate, node string) slicer.Endpoint {
	return slicer.Endpoint{Addresses: []string{addr}, NodeName: node,
		Conditions: slicer.Conditions{Ready: ready, Serving: ready, Terminating: terminating}}
}

var http80 = []slicer.Port{{Name: "http", Port: 80, Protocol: "TCP"}}

func mustNew(t *testing.T, o Options) *Cache {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v) = %v", o, err)
	}
	return c
}

func TestNewRejectsUnknownAddressType(t *testing.T) {
	_, err := New(Options{AddressType: "IP"})
	if err == nil || err.Error() != `slicecache: Options.AddressType: "IP" is not IPv4, IPv6 or FQDN` {
		t.Errorf("New(AddressType IP) = %v, want the field and value named", err)
	}
	c := mustNew(t, Options{})
	if got := c.AddressType(); got != slicer.IPv4 {
		t.Errorf("New(Options{}).AddressType() = %q, want IPv4", got)
	}
}

func TestUpdateReportsChange(t *testing.T) {
	c := mustNew(t, Options{})
	a1 := mkSlice("web-a", "web", "1", http80, ep("10.0.0.1", slicer.True, slicer.False, ""))
	a1again := mkSlice("web-a", "web", "1", http80, ep("10.0.0.1", slicer.True, slicer.False, ""))
	a2 := mkSlice("web-a", "web", "2", http80, ep("10.0.0.1", slicer.True, slicer.False, ""))
	noLabel := mkSlice("web-b", "", "1", http80)
	v6 := mkSlice("web-c", "web", "1", http80)
	v6.AddressType = slicer.IPv6
	steps := []struct {
		what   string
		do     func() bool
		want   bool
		checks []ServiceName
	}{
		{"delete of an unknown slice", func() bool { return c.Delete(a1) }, false, nil},
		{"add", func() bool { return c.Update(a1) }, true, nil},
		{"resync of the same version", func() bool { return c.Update(a1again) }, false, nil},
		{"new resourceVersion, same content", func() bool { return c.Update(a2) }, true, nil},
		{"slice without the service label", func() bool { return c.Update(noLabel) }, false, nil},
		{"slice of another address type", func() bool { return c.Update(v6) }, false, nil},
		{"checkout", func() bool { return len(c.Checkout()) == 1 }, true, nil},
		{"nothing pending", func() bool { return c.Checkout() == nil }, true, nil},
		{"delete", func() bool { return c.Delete(a2) }, true, nil},
		{"delete again", func() bool { return c.Delete(a2) }, false, nil},
		{"re-add before checkout", func() bool { return c.Update(a2) }, true, nil},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s = %v, want %v", s.what, got, s.want)
		}
	}
	// The Service is reported although its endpoints end where they were.
	got := c.Checkout()
	want := []Change{{Service: ServiceName{"ns", "web"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Checkout() after delete and re-add (-want +got):\n%s", diff)
	}
}

func TestDuplicateEndpoints(t *testing.T) {
	type copyOf struct {
		slice       string
		ready, term slicer.Tristate
		node        string
	}
	cases := []struct {
		name   string
		copies []copyOf // in the order the slices are given
		want   Endpoint
	}{
		{"non-terminating wins over terminating, given first",
			[]copyOf{{"a", slicer.True, slicer.False, "n1"}, {"b", slicer.False, slicer.True, "n2"}},
			Endpoint{Ready: true, Serving: true, NodeName: "n1"}},
		{"non-terminating wins over terminating, given last",
			[]copyOf{{"a", slicer.False, slicer.True, "n1"}, {"b", slicer.True, slicer.False, "n2"}},
			Endpoint{Ready: true, Serving: true, NodeName: "n2"}},
		{"two non-terminating: the most recent slice",
			[]copyOf{{"b", slicer.True, slicer.False, "n1"}, {"a", slicer.False, slicer.False, "n2"}},
			Endpoint{NodeName: "n2"}},
		{"two terminating: the most recent slice",
			[]copyOf{{"a", slicer.False, slicer.True, "n1"}, {"b", slicer.True, slicer.True, "n2"}},
			Endpoint{Ready: true, Serving: true, Terminating: true, NodeName: "n2"}},
		{"same slice, two non-terminating: the last",
			[]copyOf{{"a", slicer.True, slicer.False, "n1"}, {"a", slicer.False, slicer.Unset, "n2"}},
			Endpoint{NodeName: "n2"}},
		{"same slice, two terminating: the first",
			[]copyOf{{"a", slicer.Unset, slicer.True, "n1"}, {"a", slicer.False, slicer.True, "n2"}},
			Endpoint{Ready: true, Serving: true, Terminating: true, NodeName: "n1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, Options{NodeName: "n2"})
			bySlice := map[string]*Slice{}
			var order []string
			for _, cp := range tc.copies {
				s := bySlice[cp.slice]
				if s == nil {
					s = mkSlice(cp.slice, "web", "1", http80)
					bySlice[cp.slice] = s
					order = append(order, cp.slice)
				}
				s.Endpoints = append(s.Endpoints, ep("10.0.0.1", cp.ready, cp.term, cp.node))
			}
			for _, name := range order {
				c.Update(bySlice[name])
			}
			c.Checkout()
			want := tc.want
			want.Address, want.Port, want.Local = "10.0.0.1", 80, want.NodeName == "n2"
			got := c.Endpoints(ServiceName{"ns", "web"}, PortName{"http", "TCP"})
			if diff := cmp.Diff([]Endpoint{want}, got); diff != "" {
				t.Errorf("Endpoints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPortsMatchedByNameAndProtocol(t *testing.T) {
	c := mustNew(t, Options{})
	c.Update(mkSlice("web-a", "web", "1", []slicer.Port{{Name: "http", Port: 80, Protocol: "TCP"}, {Name: "dns", Port: 53, Protocol: "UDP"}},
		ep("10.0.0.1", slicer.True, slicer.False, "")))
	c.Update(mkSlice("web-b", "web", "1", []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}, {Name: "dns", Port: 53, Protocol: "TCP"}, {Name: "none", Protocol: "TCP"}},
		ep("10.0.0.2", slicer.True, slicer.False, ""), slicer.Endpoint{}))
	c.Checkout()
	svc := ServiceName{"ns", "web"}
	wantPorts := []PortName{{"dns", "TCP"}, {"dns", "UDP"}, {"http", "TCP"}}
	if diff := cmp.Diff(wantPorts, c.Ports(svc)); diff != "" {
		t.Errorf("Ports (-want +got):\n%s", diff)
	}
	var got []string
	for _, e := range c.Endpoints(svc, PortName{"http", "TCP"}) {
		got = append(got, fmt.Sprintf("%s:%d", e.Address, e.Port))
	}
	if want := []string{"10.0.0.1:80", "10.0.0.2:8080"}; !slices.Equal(got, want) {
		t.Errorf("Endpoints(http/TCP) = %v, want %v", got, want)
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct {
		t      slicer.AddressType
		in     string
		want   string
		wantOK bool
	}{
		{slicer.IPv4, "10.0.0.1", "10.0.0.1", true},
		{slicer.IPv4, "010.000.000.001", "10.0.0.1", true},
		{slicer.IPv4, "10.0.0.256", "", false},
		{slicer.IPv4, "10.0.0", "", false},
		{slicer.IPv4, "10.0.0.1.", "", false},
		{slicer.IPv6, "2001:DB8:0:0:0:0:0:1", "2001:db8::1", true},
		{slicer.IPv6, "::ffff:10.0.0.1", "10.0.0.1", true},
		{slicer.IPv6, "fe80::1%eth0", "", false},
		{slicer.IPv6, "::00000", "::", true},                // found by FuzzAddress
		{slicer.IPv6, "::ffff:010.0.0.1", "10.0.0.1", true}, // found by FuzzAddress
		{slicer.IPv6, "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8", true},
		{slicer.IPv6, "1:2:3:4::5:6:7:8", "", false},
		{slicer.IPv6, "1:2:3:4:5:6:7:8:9", "", false},
		{slicer.IPv6, "::1.2.3.4", "::102:304", true},
		{slicer.IPv6, "1::2::3", "", false},
		{slicer.IPv6, "10000::", "", false},
		{slicer.IPv6, "host.example", "", false},
		{slicer.IPv4, "nothing", "", false},
		{slicer.FQDN, "Host.Example", "host.example", true},
	}
	for _, tc := range cases {
		got, ok := normalize(tc.t, tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("normalize(%s, %q) = %q, %v, want %q, %v", tc.t, tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}
