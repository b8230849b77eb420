package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// serviceFlags choose the Service of reconcile, hints and route, and where
// to read it: files (or "-") holding it, its Pods and Nodes (and for
// reconcile its EndpointSlices), or a cluster.
type serviceFlags struct {
	namespace string
	service   string
	cluster   clusterFlags
	// noSelector is set by objects when the Service has no selector (an
	// errNoSelector); the command reports it once the input has parsed.
	noSelector error
	// allPods keeps every Pod of the input, unselected (reconcile's
	// --all-pods): the Pods are the ones given to the reconciler, as in
	// the differential test's scenario files, whose Services have no
	// selector.
	allPods bool
}

func (s *serviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.namespace, "namespace", "", "the Service's `NAMESPACE` (needed with --kubeconfig; chooses among several Services in files)")
	fs.StringVar(&s.service, "service", "", "the Service's `NAME` (needed with --kubeconfig; chooses among several Services in files)")
	s.cluster.register(fs)
}

// objects reads the Service scenario: the chosen Service, the Pods its
// selector matches in its namespace (every Pod with allPods), the other
// kinds the command uses; everything else is reported on stderr and left
// out.
func (s *serviceFlags) objects(stderr io.Writer, cmd string, files []string, kinds ...string) ([]object, error) {
	var objs []object
	var err error
	switch {
	case s.cluster.enabled() && len(files) > 0:
		return nil, usageErr("give files or --kubeconfig/--cluster, not both")
	case s.cluster.enabled():
		objs, err = s.cluster.serviceObjects(s.namespace, s.service)
	case len(files) == 0:
		return nil, usageErr("missing scenario file (\"-\" for standard input)")
	default:
		objs, err = readObjects(files...)
	}
	if err != nil {
		return nil, err
	}
	objs = pickObjects(stderr, cmd, objs, append([]string{"Service", "Pod"}, kinds...)...)
	objs, err = s.chooseService(stderr, cmd, objs)
	if err != nil {
		return nil, err
	}
	if s.allPods {
		return objs, nil
	}
	objs, err = selectPods(stderr, cmd, objs)
	if errors.As(err, new(errNoSelector)) {
		s.noSelector = err
		return objs, nil
	}
	return objs, err
}

// chooseService keeps the Service --service and --namespace name (or the
// only one) and drops the others, saying so.
func (s *serviceFlags) chooseService(stderr io.Writer, cmd string, objs []object) ([]object, error) {
	var kept []object
	var services []string
	for _, o := range objs {
		if o.Kind != "Service" {
			kept = append(kept, o)
			continue
		}
		if (s.service != "" && o.Name != s.service) || (s.namespace != "" && namespaceOrDefault(o.Namespace) != s.namespace) {
			fmt.Fprintf(stderr, "fairslice %s: ignoring %s: not the Service asked for\n", cmd, o.String())
			continue
		}
		services = append(services, o.String())
		kept = append(kept, o)
	}
	switch {
	case len(services) == 0 && (s.service != "" || s.namespace != ""):
		return nil, fmt.Errorf("no Service %s/%s in the input", namespaceOrDefault(s.namespace), s.service)
	case len(services) > 1:
		return nil, usageErr(fmt.Sprintf("%d Services in the input (%s, ...): choose one with --service and --namespace", len(services), services[0]))
	}
	return kept, nil
}

func namespaceOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// errNoSelector is returned for a Service without a selector, whose
// EndpointSlices the controller leaves alone.
type errNoSelector struct{ service string }

func (e errNoSelector) Error() string {
	return fmt.Sprintf("%s has no selector: the EndpointSlice controller manages no EndpointSlices for it (as upstream)", e.service)
}

// selectPods keeps the Pods the EndpointSlice controller would list for the
// Service: in its namespace (a Pod without one is taken to be in it) and
// matched by its selector; it reports how many it left out. A Service
// without a selector gets errNoSelector, with objs unchanged.
func selectPods(stderr io.Writer, cmd string, objs []object) ([]object, error) {
	var svc *object
	for i := range objs {
		if objs[i].Kind == "Service" {
			svc = &objs[i]
		}
	}
	if svc == nil {
		return objs, nil // the scenario parser reports the missing Service
	}
	var spec struct {
		Spec struct {
			Selector map[string]string `json:"selector"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(svc.Raw, &spec); err != nil {
		return nil, fmt.Errorf("%s: spec.selector: %v", svc.String(), err)
	}
	if spec.Spec.Selector == nil {
		return objs, errNoSelector{svc.String()}
	}
	sel := labels.SelectorFromSet(spec.Spec.Selector)
	ns := namespaceOrDefault(svc.Namespace)
	var kept []object
	otherNS, unmatched := 0, 0
	for _, o := range objs {
		if o.Kind != "Pod" {
			kept = append(kept, o)
			continue
		}
		var meta struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(o.Raw, &meta); err != nil {
			return nil, fmt.Errorf("%s: metadata.labels: %v", o.String(), err)
		}
		switch {
		case o.Namespace != "" && o.Namespace != ns:
			otherNS++
		case !sel.Matches(labels.Set(meta.Metadata.Labels)):
			unmatched++
		default:
			kept = append(kept, o)
		}
	}
	if otherNS+unmatched > 0 {
		fmt.Fprintf(stderr, "fairslice %s: left out %s: %d in other namespaces than %q, %d not matched by the selector %s\n",
			cmd, plural(otherNS+unmatched, "Pod"), otherNS, ns, unmatched, sel)
	}
	return kept, nil
}
