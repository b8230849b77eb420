package apf

import (
	"fmt"
	"net/http"
	"strings"
)

// User is the identity FlowSchema subjects match.
type User struct {
	Name   string
	Groups []string
}

// UserFunc reads the authenticated user of a request. It reports false if
// the request carries no user; the middleware then answers 500, as
// upstream's filter does without a user in the context.
type UserFunc func(r *http.Request) (User, bool)

// The Kubernetes request-header authentication convention (an
// authenticating front proxy sets these).
const (
	HeaderRemoteUser  = "X-Remote-User"
	HeaderRemoteGroup = "X-Remote-Group"
)

// RequestHeaderUser reads the user from the X-Remote-User header and the
// groups from the X-Remote-Group headers (one per group, in order), as the
// Kubernetes request-header authenticator does. A request without
// X-Remote-User is treated as "system:anonymous" in group
// "system:unauthenticated"; an authenticated user additionally gets
// "system:authenticated", as the Kubernetes authenticator adds it, so that
// the default FlowSchemas match.
//
// It authenticates nobody: it believes whatever the client sends, so any
// client can claim to be anyone, including system:masters, whom the
// bootstrap configuration exempts from every limit. Use it only behind an
// authenticating proxy that removes these headers from client requests
// and sets them itself (Kubernetes' front-proxy); otherwise wrap the
// handler in RefuseReservedIdentities.
func RequestHeaderUser(r *http.Request) (User, bool) {
	name := strings.TrimSpace(r.Header.Get(HeaderRemoteUser))
	if name == "" {
		return User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, true
	}
	groups := r.Header.Values(HeaderRemoteGroup)
	out := make([]string, 0, len(groups)+1)
	authenticated := false
	for _, g := range groups {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
			authenticated = authenticated || g == "system:authenticated"
		}
	}
	if !authenticated {
		out = append(out, "system:authenticated")
	}
	return User{Name: name, Groups: out}, true
}

// LongRunningFunc reports whether a request is long-running. Long-running
// requests other than watches bypass APF entirely.
type LongRunningFunc func(r *http.Request, ri *RequestInfo) bool

// DefaultLongRunning is kube-apiserver's long-running check: the verbs
// watch and proxy, the subresources attach, exec, proxy, log and
// portforward of resource requests, and non-resource paths under
// /debug/pprof/.
func DefaultLongRunning(_ *http.Request, ri *RequestInfo) bool {
	switch ri.Verb {
	case "watch", "proxy":
		return true
	}
	if ri.IsResourceRequest {
		switch ri.Subresource {
		case "attach", "exec", "proxy", "log", "portforward":
			return true
		}
		return false
	}
	return strings.HasPrefix(ri.Path, "/debug/pprof/")
}

// ReservedPrefix starts the user and group names Kubernetes reserves for
// the system (system:masters, system:anonymous, system:serviceaccount:…).
const ReservedPrefix = "system:"

// IsReserved reports whether a user or group name is reserved for the
// system (starts with ReservedPrefix).
func IsReserved(name string) bool {
	return strings.HasPrefix(strings.TrimSpace(name), ReservedPrefix)
}

// RefuseReservedIdentities returns a handler that answers 403 Forbidden to
// any request whose X-Remote-User or X-Remote-Group headers name a
// reserved identity (IsReserved: system:masters, system:authenticated, a
// service account…), and passes the rest to next. Put it in front of a
// Handler that reads identities with RequestHeaderUser when clients can
// reach the server directly, so that no client makes itself exempt or
// another system identity by a header; RequestHeaderUser still adds
// system:authenticated and system:anonymous itself. Behind an
// authenticating proxy that sets these headers, do not use it.
func RefuseReservedIdentities(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := reservedHeader(r.Header); ok {
			http.Error(w, fmt.Sprintf("forbidden: identity %q is reserved for the system", name), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func reservedHeader(h http.Header) (string, bool) {
	for _, key := range []string{HeaderRemoteUser, HeaderRemoteGroup} {
		for _, v := range h.Values(key) {
			if IsReserved(v) {
				return v, true
			}
		}
	}
	return "", false
}
