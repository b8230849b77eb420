package k8snamecompare

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fairslice/fairslice/internal/k8sname"
)

// randomName draws strings near the rules' edges: the characters they
// treat specially and lengths around the limits.
func randomName(rng *rand.Rand) string {
	const alphabet = "abz09AZ-_./"
	n := []int{0, 1, 2, 5, 62, 63, 64, 252, 253, 254}[rng.IntN(10)]
	var b strings.Builder
	for range n {
		if rng.IntN(3) == 0 {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		} else {
			b.WriteByte("abcxyz019"[rng.IntN(9)])
		}
	}
	return b.String()
}

// TestRulesMatchUpstream: same verdicts and the same messages.
func TestRulesMatchUpstream(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		s := randomName(rng)
		for _, tc := range []struct {
			name      string
			got, want []string
		}{
			{"DNS1123Label", k8sname.DNS1123Label(s), validation.IsDNS1123Label(s)},
			{"DNS1123Subdomain", k8sname.DNS1123Subdomain(s), validation.IsDNS1123Subdomain(s)},
			{"QualifiedName", k8sname.QualifiedName(s), validation.IsQualifiedName(s)},
			{"LabelValue", k8sname.LabelValue(s), validation.IsValidLabelValue(s)},
		} {
			if diff := cmp.Diff(tc.want, tc.got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s(%q) differs from upstream (-upstream +k8sname):\n%s", tc.name, s, diff)
			}
		}
		if got, want := k8sname.IsDNS1123Label(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			t.Fatalf("IsDNS1123Label(%q) = %v, want %v", s, got, want)
		}
		if got, want := k8sname.IsDNS1123Subdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			t.Fatalf("IsDNS1123Subdomain(%q) = %v, want %v", s, got, want)
		}
		if got, want := k8sname.IsLabelValue(s), len(validation.IsValidLabelValue(s)) == 0; got != want {
			t.Fatalf("IsLabelValue(%q) = %v, want %v", s, got, want)
		}
		if got, want := k8sname.IsQualifiedName(s), len(validation.IsQualifiedName(s)) == 0; got != want {
			t.Fatalf("IsQualifiedName(%q) = %v, want %v", s, got, want)
		}
	}
}
