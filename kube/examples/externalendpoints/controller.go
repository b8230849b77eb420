package main

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/slicer"
)

// LabelSource marks a ConfigMap as the endpoint list of the selectorless
// Service of the same name and namespace.
const LabelSource = "externalendpoints.fairslice.example/source"

// DataKey is the ConfigMap key holding the list: one address per line,
// optionally followed by "notready"; blank lines and lines starting with
// # are ignored.
const DataKey = "addresses"

// source is the controller's endpointslice.Source: a labelled
// ConfigMap's list is the endpoints of the Service of its name.
type source struct {
	services   corelisters.ServiceLister
	configMaps corelisters.ConfigMapLister
}

// Keys lists the Services with a labelled ConfigMap.
func (s source) Keys() ([]string, error) {
	list, err := s.configMaps.List(labels.SelectorFromSet(labels.Set{LabelSource: "true"}))
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(list))
	for i, cm := range list {
		keys[i] = cm.Namespace + "/" + cm.Name
	}
	return keys, nil
}

// Desired returns the Service with this key and the groups of its
// ConfigMap, or no Service (its slices are deleted) when either is gone,
// the ConfigMap lost its label, or the Service has a selector
// (kube-controller-manager's then).
func (s source) Desired(key string) (*corev1.Service, []slicer.Group, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil, err
	}
	svc, err := s.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	cm, err := s.configMaps.ConfigMaps(ns).Get(name)
	if apierrors.IsNotFound(err) || err == nil && (cm.Labels[LabelSource] != "true" || svc.Spec.Selector != nil) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	eps, err := parseAddresses(cm.Data[DataKey], portsOf(svc))
	if err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	groups, err := endpointslice.GroupsFrom(svc, eps)
	if err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	return svc, groups, nil
}

// newController returns an endpointslice.WriterController with opts on
// factory's informers, fed by the Service and ConfigMap events.
func newController(client clientset.Interface, factory informers.SharedInformerFactory, opts endpointslice.WriterControllerOptions) (*endpointslice.WriterController, error) {
	services, configMaps := factory.Core().V1().Services(), factory.Core().V1().ConfigMaps()
	opts.WaitFor = append(opts.WaitFor, services.Informer().HasSynced, configMaps.Informer().HasSynced)
	c, err := endpointslice.NewWriterController(client, factory.Discovery().V1().EndpointSlices(),
		source{services: services.Lister(), configMaps: configMaps.Lister()}, opts)
	if err != nil {
		return nil, err
	}
	changed := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.Changed(key)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, cur any) { changed(cur) }, DeleteFunc: changed}
	for _, inf := range []cache.SharedIndexInformer{services.Informer(), configMaps.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// portsOf returns the ports the endpoints serve: each Service port's
// numeric target port (its port when the target is unset).
func portsOf(svc *corev1.Service) []slicer.Port {
	var out []slicer.Port
	for _, p := range svc.Spec.Ports {
		port := p.Port
		if p.TargetPort.IntValue() > 0 {
			port = int32(p.TargetPort.IntValue())
		}
		out = append(out, slicer.Port{Name: p.Name, Port: port, Protocol: string(p.Protocol), AppProtocol: deref(p.AppProtocol)})
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// parseAddresses reads the ConfigMap's list (see DataKey), reporting
// every bad line.
func parseAddresses(data string, ports []slicer.Port) ([]endpointslice.ExternalEndpoint, error) {
	var out []endpointslice.ExternalEndpoint
	var errs []error
	for i, line := range strings.Split(data, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		serving := true
		switch {
		case len(fields) == 2 && fields[1] == "notready":
			serving = false
		case len(fields) > 1:
			errs = append(errs, fmt.Errorf("line %d %q: want an address, optionally followed by notready", i+1, line))
			continue
		}
		out = append(out, endpointslice.ExternalEndpoint{Addresses: []string{fields[0]}, Ports: ports, Serving: serving})
	}
	return out, errors.Join(errs...)
}
