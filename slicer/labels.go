package slicer

import "github.com/fairslice/fairslice/internal/k8sname"

// isReservedLabel reports whether key is one of the labels the controller
// owns on its slices; the Service's values for them are ignored.
func isReservedLabel(key string) bool {
	return key == LabelServiceName || key == LabelManagedBy || key == LabelHeadless
}

// nonReservedCount counts the labels that are not reserved.
func nonReservedCount(labels map[string]string) int {
	n := 0
	for k := range labels {
		if !isReservedLabel(k) {
			n++
		}
	}
	return n
}

// labelsDiffer reports whether the non-reserved labels of a slice differ
// from the non-reserved labels of its Service (nsr of them). Only such a
// difference causes a write.
func labelsDiffer(slice, service map[string]string, nsr int) bool {
	n := 0
	for k, v := range slice {
		if isReservedLabel(k) {
			continue
		}
		n++
		if w, ok := service[k]; !ok || w != v {
			return true
		}
	}
	return n != nsr
}

// labels returns the labels of a slice the controller writes for svc: the
// Service's non-reserved labels, the headless label when it has no cluster
// IP, the Service name and the controller name.
func (r *Reconciler) labels(svc *Service) map[string]string {
	return SliceLabels(svc, r.controller)
}

// SliceLabels returns the labels the controller named controllerName puts
// on the slices it writes for svc: the Service's labels without the
// reserved keys, plus service.kubernetes.io/headless ("") when svc is
// headless, kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by.
func SliceLabels(svc *Service, controllerName string) map[string]string {
	out := make(map[string]string, len(svc.Labels)+3)
	for k, v := range svc.Labels {
		if !isReservedLabel(k) {
			out[k] = v
		}
	}
	if svc.Headless {
		out[LabelHeadless] = ""
	}
	out[LabelServiceName] = svc.Name
	out[LabelManagedBy] = controllerName
	return out
}

// GenerateName returns the generateName of the slices of a Service named
// service: "<service>-", or the bare name when that is not a valid DNS
// subdomain prefix, as upstream.
func GenerateName(service string) string {
	p := service + "-"
	if k8sname.IsGenerateName(p) {
		return p
	}
	return service
}
