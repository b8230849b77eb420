package slicecachecompare

import (
	"testing"

	"github.com/fairslice/fairslice/slicecache"
	"github.com/fairslice/fairslice/slicer"
	utilnet "k8s.io/utils/net"
)

// FuzzAddress checks slicecache's address normalisation against the parser
// kube-proxy's cache uses (k8s.io/utils ParseIPSloppy, printed with
// net.IP's String): the same key for every address it parses, and none
// for an address it cannot parse (kube-proxy files those under "<nil>").
func FuzzAddress(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "010.001.000.255", "1.2.3", "1.2.3.4.", "256.0.0.1", "::1", "FD00::A:1",
		"::ffff:10.0.0.1", "::10.0.0.1", "fe80::1%eth0", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "::ffff:010.0.0.1", "", "x.y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		want := ""
		if ip := utilnet.ParseIPSloppy(addr); ip != nil {
			want = ip.String()
		}
		for _, at := range []slicer.AddressType{slicer.IPv4, slicer.IPv6} {
			c, err := slicecache.New(slicecache.Options{AddressType: at})
			if err != nil {
				t.Fatal(err)
			}
			c.Update(&slicecache.Slice{Slice: slicer.Slice{Name: "s", Namespace: "ns", AddressType: at,
				Labels:    map[string]string{slicer.LabelServiceName: "web"},
				Ports:     []slicer.Port{{Name: "p", Port: 1, Protocol: "TCP"}},
				Endpoints: []slicer.Endpoint{{Addresses: []string{addr}}}}})
			c.Checkout()
			got := ""
			if eps := c.Endpoints(slicecache.ServiceName{Namespace: "ns", Name: "web"}, slicecache.PortName{Name: "p", Protocol: "TCP"}); len(eps) == 1 {
				got = eps[0].Address
			}
			if got != want {
				t.Errorf("%s cache: address %q has key %q, kube-proxy's %q", at, addr, got, want)
			}
		}
	})
}
