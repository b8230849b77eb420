package slicer

import (
	"strings"
	"testing"
)

func validSlice() Slice {
	return Slice{
		Name: "web-abcde", AddressType: IPv4,
		Ports:     []Port{{Name: "http", Port: 80, Protocol: "TCP", AppProtocol: "kubernetes.io/h2c"}, {Name: "", Protocol: "UDP"}},
		Endpoints: []Endpoint{{Addresses: []string{"10.0.0.1"}, Hostname: "h", NodeName: "node-1", Hints: &Hints{ForZones: []string{"zone-a"}, ForNodes: []string{"node-1"}}}},
	}
}

func TestValidate(t *testing.T) {
	if err := Validate(validSlice()); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	tests := []struct {
		name   string
		change func(*Slice)
		want   []string
	}{
		{"no name", func(s *Slice) { s.Name = "" }, []string{"metadata.name: name or generateName is required"}},
		{"generateName", func(s *Slice) { s.Name, s.GenerateName = "", "web-" }, nil},
		{"bad name", func(s *Slice) { s.Name = "Web" }, []string{`metadata.name: "Web" is not a DNS subdomain`}},
		{"legacy IP type", func(s *Slice) { s.AddressType = "IP" }, []string{`addressType: "IP" is not one of IPv4, IPv6, FQDN`}},
		{"too many endpoints", func(s *Slice) {
			s.Endpoints = make([]Endpoint, 1001) // not checked one by one
		}, []string{"endpoints: 1001 endpoints, at most 1000"}},
		{"no addresses", func(s *Slice) { s.Endpoints[0].Addresses = nil }, []string{"endpoints[0].addresses: at least one address is required"}},
		{"101 addresses", func(s *Slice) {
			s.Endpoints[0].Addresses = strings.Split(strings.Repeat("10.0.0.1,", 101)[:9*101-1], ",")
		}, []string{"101 addresses, at most 100"}},
		{"bad IPv4", func(s *Slice) { s.Endpoints[0].Addresses = []string{"1.2.3.256", "<nil>"} }, []string{
			`endpoints[0].addresses[0]: "1.2.3.256" is not a valid IP address`, `endpoints[0].addresses[1]: "<nil>" is not a valid IP address`}},
		{"leading zeros ok", func(s *Slice) { s.Endpoints[0].Addresses = []string{"010.001.002.003"} }, nil},
		{"IPv6 in IPv4 slice", func(s *Slice) { s.Endpoints[0].Addresses = []string{"fd00::1"} }, []string{`"fd00::1" is not an IPv4 address`}},
		{"loopback", func(s *Slice) { s.Endpoints[0].Addresses = []string{"127.0.0.1"} }, []string{"loopback"}},
		{"link-local", func(s *Slice) { s.Endpoints[0].Addresses = []string{"169.254.1.1"} }, []string{"link-local range"}},
		{"multicast", func(s *Slice) { s.Endpoints[0].Addresses = []string{"224.0.0.5"} }, []string{"link-local multicast"}},
		{"unspecified v6", func(s *Slice) { s.AddressType = IPv6; s.Endpoints[0].Addresses = []string{"::"} }, []string{"unspecified"}},
		{"fe80", func(s *Slice) { s.AddressType = IPv6; s.Endpoints[0].Addresses = []string{"fe80::1"} }, []string{"link-local range"}},
		{"mapped in IPv6", func(s *Slice) { s.AddressType = IPv6; s.Endpoints[0].Addresses = []string{"::ffff:10.0.0.1"} }, []string{"not an IPv6 address"}},
		{"fqdn", func(s *Slice) { s.AddressType = FQDN; s.Endpoints[0].Addresses = []string{"db.example.com."} }, nil},
		{"bad fqdn", func(s *Slice) { s.AddressType = FQDN; s.Endpoints[0].Addresses = []string{"localhost"} }, []string{"not a fully qualified domain name"}},
		{"hostname", func(s *Slice) { s.Endpoints[0].Hostname = "a.b" }, []string{`hostname: "a.b" is not a DNS label`}},
		{"hints", func(s *Slice) {
			s.Endpoints[0].Hints = &Hints{ForZones: []string{"a", "a", "-x"}, ForNodes: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}}
		}, []string{`forZones[1].name: "a" is a duplicate`, `forZones[2].name: "-x" is not a valid label value`, "forNodes: 9 hints, at most 8"}},
		{"ports", func(s *Slice) {
			s.Ports = []Port{{Name: "Http", Protocol: "TCP"}, {Name: "x", Protocol: "ICMP", Port: 70000}, {Name: "x", Protocol: "TCP", AppProtocol: "a/b/c"}, {Protocol: ""}}
		}, []string{`ports[0].name: "Http" is not a DNS label`, `ports[1].protocol: "ICMP"`, "ports[1].port: 70000", `ports[2].name: "x" is a duplicate`,
			`ports[2].appProtocol: "a/b/c" is not a qualified name`, "ports[3].protocol: required"}},
	}
	for _, tt := range tests {
		s := validSlice()
		tt.change(&s)
		err := Validate(s)
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: Validate = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Validate = nil, want errors %q", tt.name, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate = %v\nwant it to contain %q", tt.name, err, w)
			}
		}
	}
}

// FuzzValidate feeds arbitrary strings to every field Validate parses; it
// must never panic, and a slice it accepts must keep its addresses in the
// syntax of its type.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "fd00::1", "a.b.c", "", "1.2.3.256", "::ffff:1.2.3.4", "fe80::1%eth0", "web-", "x/y"} {
		f.Add(s, s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, addr, name string, kind uint8) {
		at := []AddressType{IPv4, IPv6, FQDN, "IP"}[kind%4]
		s := Slice{Name: name, AddressType: at, Ports: []Port{{Name: name, Protocol: "TCP", AppProtocol: name}},
			Endpoints: []Endpoint{{Addresses: []string{addr}, Hostname: name, NodeName: name, Hints: &Hints{ForZones: []string{name}, ForNodes: []string{name}}}}}
		if Validate(s) == nil && at == IPv6 && !isIPv6String(addr) {
			t.Fatalf("accepted %q as IPv6", addr)
		}
	})
}
