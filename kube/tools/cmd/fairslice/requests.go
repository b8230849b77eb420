package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
)

// requestSpec is a request as a line of classify's input or explain's
// flags give it: who, the verb, and either a URL path (parsed as
// kube-apiserver's RequestInfo would parse it) or the RequestInfo fields
// themselves, or both, which must then agree.
type requestSpec struct {
	flowschema.Request
	// ResourceRequest shadows the Request's field (and takes its JSON
	// name): nil when the input does not say, so that what it says can be
	// checked against the path or the resource.
	ResourceRequest *bool `json:"resourceRequest"`
}

// verbMethods are the HTTP methods of the Kubernetes resource verbs.
var verbMethods = map[string]string{
	"get": http.MethodGet, "list": http.MethodGet, "watch": http.MethodGet, "proxy": http.MethodGet,
	"create": http.MethodPost, "update": http.MethodPut, "patch": http.MethodPatch,
	"delete": http.MethodDelete, "deletecollection": http.MethodDelete,
}

// request resolves s into the request FlowSchemas match. A path is parsed
// with apf.ParseRequestInfo; a field that contradicts it, or a resource
// request marked as non-resource, is an error naming the field.
func (s *requestSpec) request() (flowschema.Request, error) {
	r := s.Request
	r.ResourceRequest = false
	switch {
	case s.User == "":
		return r, errors.New("user: missing")
	case s.Verb == "":
		return r, errors.New("verb: missing")
	case s.Path != "":
		return s.fromPath()
	case s.Resource != "":
		if s.ResourceRequest != nil && !*s.ResourceRequest {
			return r, fmt.Errorf("resourceRequest: false contradicts resource %q", s.Resource)
		}
		r.ResourceRequest = true
		return r, nil
	case s.ResourceRequest != nil && *s.ResourceRequest:
		return r, errors.New("resource: missing for a resource request")
	}
	return r, errors.New("path: missing (give path, or resource for a resource request)")
}

// fromPath parses s.Path with the method of s.Verb and checks the fields
// s gives against the result.
func (s *requestSpec) fromPath() (flowschema.Request, error) {
	method, ok := verbMethods[s.Verb]
	if !ok {
		method = strings.ToUpper(s.Verb) // a non-resource request's verb is its method
	}
	u, err := url.Parse(s.Path)
	if err != nil || !strings.HasPrefix(u.Path, "/") {
		return flowschema.Request{}, fmt.Errorf("path: %q is not an absolute URL path", s.Path)
	}
	if s.Verb == "watch" && !strings.Contains(u.Path, "/watch/") {
		q := u.Query()
		q.Set("watch", "true")
		u.RawQuery = q.Encode()
	}
	ri, err := apf.ParseRequestInfo(&http.Request{Method: method, URL: u})
	if err != nil {
		return flowschema.Request{}, fmt.Errorf("path: %w", err)
	}
	r := flowschema.Request{User: s.User, Groups: s.Groups, Verb: ri.Verb, APIGroup: ri.APIGroup, Resource: ri.Resource,
		Subresource: ri.Subresource, Namespace: ri.Namespace, Name: ri.Name, Path: ri.Path, ResourceRequest: ri.IsResourceRequest}
	var errs []error
	check := func(field, given, parsed string) {
		if given != "" && given != parsed {
			errs = append(errs, fmt.Errorf("%s: %q contradicts path %q, where kube-apiserver sees %q", field, given, s.Path, parsed))
		}
	}
	check("verb", s.Verb, ri.Verb)
	check("apiGroup", s.APIGroup, ri.APIGroup)
	check("resource", s.Resource, ri.Resource)
	check("subresource", s.Subresource, ri.Subresource)
	check("namespace", s.Namespace, ri.Namespace)
	check("name", s.Name, ri.Name)
	if s.ResourceRequest != nil && *s.ResourceRequest != ri.IsResourceRequest {
		errs = append(errs, fmt.Errorf("resourceRequest: %t contradicts path %q, which is a %s", *s.ResourceRequest, s.Path, requestKind(ri.IsResourceRequest)))
	}
	return r, errors.Join(errs...)
}

func requestKind(resource bool) string {
	if resource {
		return "resource request"
	}
	return "non-resource request"
}

// parseRequests reads one JSON request per non-empty line; errors name the
// input and the line.
func parseRequests(source string, data []byte) ([]flowschema.Request, error) {
	var reqs []flowschema.Request
	var errs []error
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var s requestSpec
		if err := dec.Decode(&s); err != nil {
			errs = append(errs, fmt.Errorf("%s: line %d: %w", source, n+1, err))
			continue
		}
		r, err := s.request()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: line %d: %w", source, n+1, err))
			continue
		}
		reqs = append(reqs, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests (the input is empty)", source)
	}
	return reqs, nil
}
