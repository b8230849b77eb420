// Package k8snamecompare checks the core module's internal/k8sname rules
// against k8s.io/apimachinery/pkg/util/validation on random strings.
package k8snamecompare
