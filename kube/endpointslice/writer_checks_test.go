package endpointslice

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/kube/internal/fixture"
	"github.com/fairslice/fairslice/slicer"
)

// wantErrNaming fails unless err names every want, and none of notWant.
func wantErrNaming(t *testing.T, call string, err error, want []string, notWant ...string) {
	t.Helper()
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s = %v, want it to name %q", call, err, w)
		}
	}
	for _, w := range notWant {
		if err != nil && strings.Contains(err.Error(), w) {
			t.Errorf("%s = %v, must not name %q", call, err, w)
		}
	}
}

func TestGroupsFromRefusesBadPorts(t *testing.T) {
	svc := fixture.Service("vms", func(s *corev1.Service) { s.Spec.Selector = nil })
	at := func(p ...slicer.Port) ExternalEndpoint {
		return ExternalEndpoint{Addresses: []string{"10.0.0.1"}, Ports: p, Serving: true}
	}
	_, err := GroupsFrom(svc, []ExternalEndpoint{
		at(slicer.Port{Name: "http", Port: 8080}),
		at(slicer.Port{Name: "http", Port: 0}),
		at(slicer.Port{Name: "http", Port: 70000}),
		at(slicer.Port{Name: "http", Port: -1}),
		at(slicer.Port{Name: "PG_1", Port: 5432}),
		at(slicer.Port{Name: "pg", Port: 5432}, slicer.Port{Name: "pg", Port: 5433}),
		at(slicer.Port{Name: "http", Port: 80, Protocol: "HTTP"}),
	})
	wantErrNaming(t, "GroupsFrom(bad ports)", err, []string{
		"endpoints[1] [10.0.0.1]: ports[0].port: 0 is not in 1..65535",
		"endpoints[2] [10.0.0.1]: ports[0].port: 70000 is not in 1..65535",
		"endpoints[3] [10.0.0.1]: ports[0].port: -1 is not in 1..65535",
		`endpoints[4] [10.0.0.1]: ports[0].name: "PG_1" is not a DNS label`,
		`endpoints[5] [10.0.0.1]: ports[1].name: "pg" is a duplicate`,
		`endpoints[6] [10.0.0.1]: ports[0].protocol: "HTTP" is not one of TCP, UDP, SCTP`,
	}, "endpoints[0]")
}

func TestGroupsFromReportsMistypedIPsAsInvalidIPs(t *testing.T) {
	svc := fixture.Service("vms", func(s *corev1.Service) {
		s.Spec.Selector = nil
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	})
	for _, tc := range []struct{ addr, want string }{
		{"10.0.0.300", `address "10.0.0.300": not a valid IP address`},
		{"010.002.000.001", `address "010.002.000.001": not a valid IP address`},
		{"10.0.0", `address "10.0.0": not a valid IP address`},
		{"2001:db8::zz", `address "2001:db8::zz": not a valid IP address`},
		{"::ffff:10.0.0.1", `address "::ffff:10.0.0.1": an IPv4-mapped IPv6 address`},
		{"fe80::1%eth0", `address "fe80::1%eth0": an IP address with a zone`},
		{"127.0.0.1", `addresses[0]: "127.0.0.1" may not be in the loopback range`},
		{"169.254.0.1", `addresses[0]: "169.254.0.1" may not be in the link-local range`},
		{"fe80::1", `addresses[0]: "fe80::1" may not be in the link-local range`},
		{"0.0.0.0", `may not be unspecified`},
	} {
		_, err := GroupsFrom(svc, []ExternalEndpoint{{Addresses: []string{tc.addr}}})
		wantErrNaming(t, "GroupsFrom("+tc.addr+")", err, []string{"endpoints[0] [" + tc.addr + "]", tc.want}, "FQDN")
	}
}

func TestSyncRefusesServiceWithSelectorUnlessAllowed(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	f.svc = fixture.Service("vms") // selects app=vms: kube-controller-manager's
	w, err := f.sync(vm(1, true))
	wantErrNaming(t, "Sync(Service with a selector)", err, []string{"Service ns/vms has a selector", "AllowSelector"})
	if len(w) != 0 {
		t.Errorf("Sync(Service with a selector) wrote %v, want nothing", w)
	}

	f = newWriterFixture(t, WriterOptions{AllowSelector: true})
	f.svc = fixture.Service("vms")
	if w, err := f.sync(vm(1, true)); err != nil || len(w["create"]) != 1 {
		t.Errorf("Sync(Service with a selector, AllowSelector) = writes %v, %v; want one create, nil", w, err)
	}
}

func TestSyncRefusesPortNamesTheServiceLacksUnlessAllowed(t *testing.T) {
	pg := ExternalEndpoint{Addresses: []string{"10.0.0.1"}, Serving: true, Ports: []slicer.Port{{Name: "pg", Port: 5432}}}
	f := newWriterFixture(t, WriterOptions{})
	w, err := f.sync(pg)
	wantErrNaming(t, "Sync(port pg, Service port http)", err, []string{`groups[0] ports[0].name "pg": not the name of a port of Service ns/vms`, "AllowUndeclaredPortNames"})
	if len(w) != 0 {
		t.Errorf("Sync(undeclared port name) wrote %v, want nothing", w)
	}
	f = newWriterFixture(t, WriterOptions{AllowUndeclaredPortNames: true})
	if w, err := f.sync(pg); err != nil || len(w["create"]) != 1 {
		t.Errorf("Sync(undeclared port name, AllowUndeclaredPortNames) = writes %v, %v; want one create, nil", w, err)
	}
}

func TestSyncRefusesBadPortsOfHandBuiltGroups(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	groups := []slicer.Group{{AddressType: slicer.IPv4, Ports: []slicer.Port{{Name: "http", Port: 70000, Protocol: "TCP"}},
		Endpoints: []slicer.Endpoint{{Addresses: []string{"10.0.0.1"}}}}}
	err := f.w.Sync(context.Background(), f.svc, groups)
	wantErrNaming(t, "Sync(port 70000)", err, []string{"groups[0].ports[0].port: 70000 is not in 1..65535"})
	if w := f.writes(); len(w) != 0 {
		t.Errorf("Sync(port 70000) wrote %v, want nothing", w)
	}
}

func TestSyncReturnsInvalidSlicesAndWritesNothing(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	http := []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}}
	groups := []slicer.Group{{AddressType: slicer.IPv4, Ports: http, Endpoints: []slicer.Endpoint{
		{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"127.0.0.1"}}, {Addresses: []string{"169.254.0.9"}},
	}}}
	f.client.ClearActions()
	err := f.w.Sync(context.Background(), f.svc, groups)
	var inv slicer.InvalidSlice
	if !errors.As(err, &inv) {
		t.Fatalf("Sync(loopback and link-local) = %v, want an error wrapping slicer.InvalidSlice", err)
	}
	wantErrNaming(t, "Sync(loopback and link-local)", err, []string{"127.0.0.1", "loopback", "169.254.0.9", "link-local"})
	if w := f.writes(); len(w) != 0 {
		t.Errorf("Sync(loopback and link-local) wrote %v, want nothing", w)
	}
}

func TestFQDNWriterWritesFQDNSlicesOnly(t *testing.T) {
	db := ExternalEndpoint{Addresses: []string{"db-1.example.com"}, Serving: true, Ports: []slicer.Port{{Name: "http", Port: 5432}}}
	f := newWriterFixture(t, WriterOptions{})
	_, err := f.sync(db)
	wantErrNaming(t, "Sync(FQDN group, IP Writer)", err, []string{`groups[0] addressType "FQDN"`, "WriterOptions.FQDN"})

	f = newWriterFixture(t, WriterOptions{FQDN: true})
	if w, err := f.sync(db); err != nil || len(w["create"]) != 1 {
		t.Fatalf("Sync(FQDN group, FQDN Writer) = writes %v, %v; want one create, nil", w, err)
	}
	list := f.slices()
	if len(list) != 1 || list[0].AddressType != discovery.AddressTypeFQDN || len(list[0].Endpoints) != 1 ||
		list[0].Endpoints[0].Addresses[0] != "db-1.example.com" {
		t.Errorf("FQDN Writer's slices = %+v, want one FQDN slice holding db-1.example.com", list)
	}
	f.syncSlicesToStore()
	_, err = f.sync(vm(1, true))
	wantErrNaming(t, "Sync(IPv4 group, FQDN Writer)", err, []string{`groups[0] addressType "IPv4"`})
	if w, err := f.sync(); err != nil || len(w["update"]) != 1 {
		t.Errorf("Sync(no endpoints, FQDN Writer) = writes %v, %v; want the slice emptied as a placeholder", w, err)
	}
	f.syncSlicesToStore()
	if list := f.slices(); len(list) != 1 || list[0].AddressType != discovery.AddressTypeFQDN || len(list[0].Endpoints) != 0 {
		t.Errorf("FQDN Writer's placeholder = %+v, want one empty FQDN slice", list)
	}
}
