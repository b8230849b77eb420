package kubescenario

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Nodes looks nodes up by name, as adapter.NodeGetter wants, without an
// informer or a lister.
type Nodes map[string]*corev1.Node

// NodesOf indexes nodes by name.
func NodesOf(nodes []*corev1.Node) Nodes {
	m := make(Nodes, len(nodes))
	for _, n := range nodes {
		m[n.Name] = n
	}
	return m
}

// Get returns the node called name, or a NotFound error as a lister's.
func (m Nodes) Get(name string) (*corev1.Node, error) {
	if n, ok := m[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}
