package k8sname

import (
	"strings"
	"testing"
)

func TestChecks(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		s                                     string
		label, subdomain, value, qname, gname bool
	}{
		{"web", true, true, true, true, true},
		{"", false, false, true, false, false},
		{"a.b", false, true, true, true, true},
		{"A", false, false, true, true, false},
		{"-a", false, false, false, false, false},
		{"a-", false, false, false, false, true},
		{"a_b", false, false, true, true, false},
		{"ex.com/Name", false, false, false, true, false},
		{"/x", false, false, false, false, false},
		{long(63), true, true, true, true, true},
		{long(64), false, true, false, false, true},
		{long(253), false, true, false, false, true},
		{long(254), false, false, false, false, false},
		{long(253) + "-", false, false, false, false, true}, // masked to 253 characters
	} {
		if got := IsDNS1123Label(tc.s); got != tc.label {
			t.Errorf("IsDNS1123Label(%q) = %v, want %v", tc.s, got, tc.label)
		}
		if got := IsDNS1123Subdomain(tc.s); got != tc.subdomain {
			t.Errorf("IsDNS1123Subdomain(%q) = %v, want %v", tc.s, got, tc.subdomain)
		}
		if got := IsLabelValue(tc.s); got != tc.value {
			t.Errorf("IsLabelValue(%q) = %v, want %v", tc.s, got, tc.value)
		}
		if got := IsQualifiedName(tc.s); got != tc.qname {
			t.Errorf("IsQualifiedName(%q) = %v, want %v", tc.s, got, tc.qname)
		}
		if got := IsGenerateName(tc.s); got != tc.gname {
			t.Errorf("IsGenerateName(%q) = %v, want %v", tc.s, got, tc.gname)
		}
		if got := len(DNS1123Label(tc.s)) == 0; got != tc.label {
			t.Errorf("DNS1123Label(%q) = %v, want problems %v", tc.s, DNS1123Label(tc.s), !tc.label)
		}
		if got := len(DNS1123Subdomain(tc.s)) == 0; got != tc.subdomain {
			t.Errorf("DNS1123Subdomain(%q) = %v, want problems %v", tc.s, DNS1123Subdomain(tc.s), !tc.subdomain)
		}
		if got := len(LabelValue(tc.s)) == 0; got != tc.value {
			t.Errorf("LabelValue(%q) = %v, want problems %v", tc.s, LabelValue(tc.s), !tc.value)
		}
	}
}
