package grpcapf

import (
	"context"
	"strings"

	"github.com/fairslice/fairslice/apf"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// The groups Kubernetes' authenticators add, which the bootstrap
// FlowSchemas match.
const (
	groupAuthenticated   = "system:authenticated"
	groupUnauthenticated = "system:unauthenticated"
	userAnonymous        = "system:anonymous"
)

// MetadataUser returns a UserFunc that reads the user from the incoming
// metadata value of userKey and the groups from every value of groupsKey,
// in order (metadata keys are lowercase; empty values are skipped). As
// Kubernetes' request-header authenticator, it adds "system:authenticated"
// to a named user and takes an RPC without userKey as "system:anonymous"
// in "system:unauthenticated", so that the bootstrap FlowSchemas match.
//
// It authenticates nobody: it believes the metadata, so use it behind a
// proxy that authenticates callers and sets these keys itself. To keep a
// caller from naming itself into an exempt or system identity, it refuses
// (codes.PermissionDenied) a user or group with apf.ReservedPrefix
// ("system:", as in system:masters).
func MetadataUser(userKey, groupsKey string) UserFunc {
	userKey, groupsKey = strings.ToLower(userKey), strings.ToLower(groupsKey)
	return func(ctx context.Context, _ string) (apf.User, error) {
		return metadataUser(metadata.ValueFromIncomingContext(ctx, userKey), metadata.ValueFromIncomingContext(ctx, groupsKey))
	}
}

func metadataUser(users, values []string) (apf.User, error) {
	var name string
	if v := users; len(v) > 0 {
		name = strings.TrimSpace(v[0])
	}
	if name == "" {
		return apf.User{Name: userAnonymous, Groups: []string{groupUnauthenticated}}, nil
	}
	if apf.IsReserved(name) {
		return apf.User{}, status.Errorf(codes.PermissionDenied, "grpcapf: user %q is reserved for the system", name)
	}
	groups := make([]string, 0, len(values)+1)
	for _, g := range values {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if apf.IsReserved(g) {
			return apf.User{}, status.Errorf(codes.PermissionDenied, "grpcapf: group %q is reserved for the system", g)
		}
		groups = append(groups, g)
	}
	return apf.User{Name: name, Groups: append(groups, groupAuthenticated)}, nil
}

// CertificateUser is a UserFunc for servers that verify client
// certificates (mTLS with tls.RequireAndVerifyClientCert or
// VerifyClientCertIfGiven): the user is the verified leaf certificate's
// subject common name and the groups its organizations, plus
// "system:authenticated", as Kubernetes' x509 authenticator reads a client
// certificate. An RPC without a verified certificate (plaintext, or TLS
// without one) fails with codes.Unauthenticated.
func CertificateUser(ctx context.Context, _ string) (apf.User, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return apf.User{}, status.Error(codes.Unauthenticated, "grpcapf: no peer in the RPC's context")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return apf.User{}, status.Error(codes.Unauthenticated, "grpcapf: no verified client certificate")
	}
	subject := info.State.VerifiedChains[0][0].Subject
	if subject.CommonName == "" {
		return apf.User{}, status.Error(codes.Unauthenticated, "grpcapf: the client certificate has no common name")
	}
	groups := make([]string, 0, len(subject.Organization)+1)
	groups = append(groups, subject.Organization...)
	return apf.User{Name: subject.CommonName, Groups: append(groups, groupAuthenticated)}, nil
}
