package grpcapf_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/grpcapf"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

func TestMetadataUser(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		want   apf.User
		denied bool
	}{
		{"user and groups, in order", incoming("alice", "tenants", " team-a "), apf.User{Name: "alice", Groups: []string{"tenants", "team-a", "system:authenticated"}}, false},
		{"no groups", incoming("bob"), apf.User{Name: "bob", Groups: []string{"system:authenticated"}}, false},
		{"empty group skipped", incoming("bob", ""), apf.User{Name: "bob", Groups: []string{"system:authenticated"}}, false},
		{"no user", context.Background(), apf.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, false},
		{"blank user", incoming("  ", "tenants"), apf.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, false},
		{"reserved user", incoming("system:admin"), apf.User{}, true},
		{"reserved group", incoming("mallory", "system:masters"), apf.User{}, true},
	} {
		got, err := metadataUser(tc.ctx, checkMethod)
		if tc.denied {
			if status.Code(err) != codes.PermissionDenied {
				t.Errorf("%s: MetadataUser = %v, %v; want PermissionDenied", tc.name, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: MetadataUser error %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: MetadataUser (-want +got):\n%s", tc.name, diff)
		}
	}
	// Keys are matched as gRPC sends them: lowercase.
	got, err := grpcapf.MetadataUser("X-User", "X-Group")(incoming("carol", "tenants"), checkMethod)
	if err != nil || got.Name != "carol" {
		t.Errorf("MetadataUser with capitalized keys = %v, %v; want carol", got, err)
	}
}

func tlsPeer(chains [][]*x509.Certificate) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: chains}}})
}

func TestCertificateUser(t *testing.T) {
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "alice", Organization: []string{"tenants", "team-a"}}}
	got, err := grpcapf.CertificateUser(tlsPeer([][]*x509.Certificate{{leaf}}), checkMethod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(apf.User{Name: "alice", Groups: []string{"tenants", "team-a", "system:authenticated"}}, got); diff != "" {
		t.Errorf("CertificateUser of a verified certificate (-want +got):\n%s", diff)
	}
	for name, ctx := range map[string]context.Context{
		"no peer":                context.Background(),
		"plaintext peer":         peer.NewContext(context.Background(), &peer.Peer{}),
		"TLS without chains":     tlsPeer(nil),
		"certificate without CN": tlsPeer([][]*x509.Certificate{{{Subject: pkix.Name{Organization: []string{"x"}}}}}),
	} {
		if _, err := grpcapf.CertificateUser(ctx, checkMethod); status.Code(err) != codes.Unauthenticated {
			t.Errorf("CertificateUser with %s: %v, want Unauthenticated", name, err)
		}
	}
}

// FuzzMetadataUser checks MetadataUser's promises on any metadata: a
// caller either is refused for a reserved name, or is anonymous, or is a
// named user whose groups end with system:authenticated and name nothing
// reserved or blank.
func FuzzMetadataUser(f *testing.F) {
	f.Add("alice", "tenants", "team-a")
	f.Add("", "tenants", "")
	f.Add(" system:masters", "", "")
	f.Add("mallory", "system:masters ", "x")
	f.Fuzz(func(t *testing.T, user, g1, g2 string) {
		got, err := metadataUser(incoming(user, g1, g2), checkMethod)
		if err != nil {
			if status.Code(err) != codes.PermissionDenied || !(apf.IsReserved(user) || apf.IsReserved(g1) || apf.IsReserved(g2)) {
				t.Fatalf("MetadataUser(%q, %q, %q) error %v, want PermissionDenied only for a reserved name", user, g1, g2, err)
			}
			return
		}
		if got.Name == "system:anonymous" {
			if diff := cmp.Diff([]string{"system:unauthenticated"}, got.Groups); diff != "" {
				t.Fatalf("anonymous groups (-want +got):\n%s", diff)
			}
			return
		}
		if got.Name == "" || apf.IsReserved(got.Name) || len(got.Groups) == 0 || got.Groups[len(got.Groups)-1] != "system:authenticated" {
			t.Fatalf("MetadataUser(%q, %q, %q) = %+v", user, g1, g2, got)
		}
		for _, g := range got.Groups[:len(got.Groups)-1] {
			if g == "" || apf.IsReserved(g) {
				t.Fatalf("MetadataUser(%q, %q, %q) = %+v: group %q", user, g1, g2, got, g)
			}
		}
	})
}
