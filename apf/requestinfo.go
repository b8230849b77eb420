package apf

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// RequestInfo is what APF reads from a request besides its user: the
// attributes FlowSchema rules match and the work estimator uses. It mirrors
// upstream's k8s.io/apiserver/pkg/endpoints/request.RequestInfo.
type RequestInfo struct {
	// IsResourceRequest is true for Kubernetes API resource paths
	// (/api/v1/..., /apis/group/version/...) and false for everything
	// else, which FlowSchemas match with non-resource rules.
	IsResourceRequest bool
	// Path is the URL path.
	Path string
	// Verb is the Kubernetes verb (get, list, watch, create, update,
	// patch, delete, deletecollection, proxy) of a resource request, or the
	// lowercase HTTP method of a non-resource request.
	Verb string

	APIPrefix   string // "api" or "apis"
	APIGroup    string // "" for the core group
	APIVersion  string
	Namespace   string // "" for cluster-scoped requests
	Resource    string
	Subresource string
	Name        string

	// FieldSelector and LabelSelector are the raw selectors of list,
	// watch and deletecollection requests.
	FieldSelector string
	LabelSelector string
}

// RequestInfoFunc derives a request's RequestInfo. ParseRequestInfo is the
// one for Kubernetes-style API paths.
type RequestInfoFunc func(r *http.Request) (RequestInfo, error)

// ParseRequestInfo parses r as the Kubernetes API server does (upstream's
// RequestInfoFactory with API prefixes "api" and "apis", "api" being
// groupless): /api/v1/namespaces/ns/pods/name/status is a resource request
// with verb from the method (GET is get, or list/watch without a name; POST
// create, PUT update, PATCH patch, DELETE delete, or deletecollection
// without a name), and /apis/{group}/{version}/... the same with a group.
// A "watch" or "proxy" path segment after the version sets the verb. Paths
// outside /api and /apis are non-resource requests with the lowercase
// method as verb. The error is upstream's for a special verb with nothing
// after it; the returned RequestInfo is still usable then.
func ParseRequestInfo(r *http.Request) (RequestInfo, error) {
	ri := RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return ri, nil
	}
	ri.APIPrefix = parts[0]
	parts = parts[1:]
	if ri.APIPrefix == "apis" {
		if len(parts) < 3 {
			return ri, nil
		}
		ri.APIGroup = parts[0]
		parts = parts[1:]
	}
	ri.IsResourceRequest = true
	ri.APIVersion = parts[0]
	parts = parts[1:]

	viaPath := parts[0] == "watch" || parts[0] == "proxy"
	if viaPath {
		if len(parts) < 2 {
			return ri, fmt.Errorf("apf: unable to determine kind and namespace from url %s", r.URL)
		}
		ri.Verb = parts[0]
		parts = parts[1:]
	} else {
		ri.Verb = methodVerb(r.Method)
	}
	ri.setResource(parts)
	ri.setCollection(r.URL, viaPath)
	return ri, nil
}

// methodVerb returns the verb of a resource request's HTTP method, before
// the collection verbs (list, watch, deletecollection) are told apart.
func methodVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// setResource sets namespace, resource, name and subresource from the
// path segments after the version (and a watch or proxy segment).
func (ri *RequestInfo) setResource(parts []string) {
	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			ri.Namespace = parts[1]
			// /namespaces/{ns}/status and /finalize are subresources of
			// the namespace object itself.
			if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
				parts = parts[2:]
			}
		}
	}
	if len(parts) >= 3 && ri.Verb != "proxy" {
		ri.Subresource = parts[2]
	}
	if len(parts) >= 2 {
		ri.Name = parts[1]
	}
	ri.Resource = parts[0]
}

// setCollection turns get and delete without a name into list, watch or
// deletecollection (a fieldSelector on metadata.name naming the object, as
// upstream), and records the selectors of collection requests whose verb
// did not come from the path.
func (ri *RequestInfo) setCollection(u *url.URL, viaPath bool) {
	var query map[string][]string
	if ri.Name == "" && ri.Verb == "get" {
		query = u.Query()
		if watchParam(query["watch"]) {
			ri.Verb = "watch"
		} else {
			ri.Verb = "list"
		}
		// Upstream decodes all list options here and, if that fails (a
		// non-numeric limit or timeoutSeconds, or a malformed selector;
		// only the numeric fields are checked here), reads only watch.
		_, err := parseListOptions(query)
		if vals := query["fieldSelector"]; len(vals) > 0 && err == nil {
			if name, ok := exactFieldMatch(vals[0], "metadata.name"); ok && isPathSegmentName(name) {
				ri.Name = name
			}
		}
	}
	if ri.Name == "" && ri.Verb == "delete" {
		ri.Verb = "deletecollection"
	}
	if !viaPath && (ri.Verb == "list" || ri.Verb == "watch" || ri.Verb == "deletecollection") {
		if query == nil {
			query = u.Query()
		}
		if vals := query["fieldSelector"]; len(vals) > 0 {
			ri.FieldSelector = vals[0]
		}
		if vals := query["labelSelector"]; len(vals) > 0 {
			ri.LabelSelector = vals[0]
		}
	}
}

// watchParam converts a boolean query parameter as Kubernetes does: absent,
// "0" and "false" (any case) are false, anything else is true.
func watchParam(vals []string) bool {
	if len(vals) == 0 {
		return false
	}
	return vals[0] != "0" && !strings.EqualFold(vals[0], "false")
}

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// exactFieldMatch returns the value a field selector requires field to
// equal ("field=v" or "field==v" among comma-separated terms).
func exactFieldMatch(selector, field string) (string, bool) {
	for _, term := range splitSelector(selector) {
		if v, ok := strings.CutPrefix(term, field+"=="); ok {
			return unescapeSelector(v), true
		}
		if v, ok := strings.CutPrefix(term, field+"="); ok {
			return unescapeSelector(v), true
		}
	}
	return "", false
}

// splitSelector splits a field selector at commas not escaped by a
// backslash.
func splitSelector(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case ',':
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func unescapeSelector(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// isPathSegmentName reports whether name can be a path segment, as
// Kubernetes requires of object names.
func isPathSegmentName(name string) bool {
	return name != "." && name != ".." && !strings.ContainsAny(name, "/%")
}
