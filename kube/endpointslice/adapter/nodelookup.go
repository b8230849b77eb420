package adapter

// Node → what a pod's endpoint takes from its node: whether it exists,
// and its zone (topology.kubernetes.io/zone).

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// NodeGetter looks nodes up by name; a client-go NodeLister is one. A
// missing node is reported with an error for which
// k8s.io/apimachinery/pkg/api/errors.IsNotFound is true.
type NodeGetter interface {
	Get(name string) (*corev1.Node, error)
}

// nodeMemo is what the plan depends on of a node.
type nodeMemo struct {
	found bool
	zone  string
	name  string // shared by the endpoints on the node
}

// lookupNode returns what the plan depends on of the named node.
func lookupNode(nodes NodeGetter, name string) (nodeMemo, error) {
	n, err := nodes.Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nodeMemo{}, nil
		}
		return nodeMemo{}, fmt.Errorf("looking up node %q: %w", name, err)
	}
	if n == nil {
		return nodeMemo{}, nil
	}
	return nodeMemo{found: true, zone: n.Labels[corev1.LabelTopologyZone], name: name}, nil
}
