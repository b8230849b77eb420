package adapter

// Service → slicer.Service: the facts of a Service the slicer plans
// from.

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/slicer"
)

// ServiceFacts returns the slicer facts about svc, with the given trigger
// time (the TriggerTimeTracker's, or zero).
func ServiceFacts(svc *corev1.Service, triggerTime time.Time) slicer.Service {
	families := make([]string, len(svc.Spec.IPFamilies))
	for i, f := range svc.Spec.IPFamilies {
		families[i] = string(f)
	}
	return slicer.Service{
		Namespace:                svc.Namespace,
		Name:                     svc.Name,
		UID:                      string(svc.UID),
		Labels:                   svc.Labels,
		AddressTypes:             slicer.AddressTypesFor(families, svc.Spec.ClusterIP),
		Headless:                 svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone,
		PublishNotReadyAddresses: svc.Spec.PublishNotReadyAddresses,
		Deleting:                 svc.DeletionTimestamp != nil,
		TriggerTime:              triggerTime,
	}
}

func familyStrings(fs []corev1.IPFamily) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}
