// Package e2e holds the tests that run against a real kube-apiserver
// (kube/verify/internal/realapiserver): the EndpointSlice controller next to
// upstream's, the flow controller inside the server, three apf servers
// coordinating through its Leases (apf/fleet, kube/fleetlease), and the CLI
// against a live cluster. They share one test binary because each package
// that links kube-apiserver is a large, slow build.
package e2e
