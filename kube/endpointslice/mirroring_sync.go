//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslice

// One sync of an Endpoints key: mirror it, or delete its mirrored slices.

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/fairslice/fairslice/slicer"
)

// syncEndpoints mirrors the Endpoints object with this key, or deletes
// its mirrored slices when it should not be mirrored.
func (c *MirroringController) syncEndpoints(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	nn := types.NamespacedName{Namespace: ns, Name: name}
	ep, err := c.endpointsLister.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) || err == nil && !shouldMirror(ep) {
		return c.deleteMirrored(ctx, nn)
	}
	if err != nil {
		return err
	}
	svc, err := c.serviceLister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) || err == nil && svc.Spec.Selector != nil {
		return c.deleteMirrored(ctx, nn)
	}
	if err != nil {
		return err
	}
	existing, err := c.list(nn)
	if err != nil {
		return err
	}
	if err := c.fresh("endpoints", nn, existing); err != nil {
		return err
	}
	var conv Converter
	have, err := conv.Existing(existing)
	if err != nil {
		return err
	}
	plan, err := slicer.Mirror(EndpointsFromAPI(ep), have, slicer.MirrorOptions{MaxEndpointsPerSubset: c.maxSubset})
	if err != nil {
		return err
	}
	c.mirrorMetric.mirrored(nn, &plan)
	if plan.Invalid > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, ReasonInvalidIPAddress,
			"Skipped %d invalid IP addresses when mirroring to EndpointSlices", plan.Invalid)
	}
	if plan.Skipped > plan.Invalid {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, ReasonTooManyAddressesToMirror,
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", c.maxSubset, plan.Skipped)
	}
	return c.writeOnePass(ctx, "Endpoints "+ep.Namespace+"/"+ep.Name, ep.Namespace, plan.Plan, existing, ep.DeletionTimestamp == nil)
}

// deleteMirrored deletes every slice mirrored for the Endpoints and
// forgets it. Upstream counts none of these deletes as changes.
func (c *MirroringController) deleteMirrored(ctx context.Context, nn types.NamespacedName) error {
	c.tracker.deleteService(nn)
	existing, err := c.list(nn)
	if err != nil {
		return err
	}
	c.mirrorMetric.forget(nn)
	w := c.sliceWriter("Endpoints " + nn.String())
	w.change = nil
	return w.deleteEach(ctx, nn.Namespace, existing)
}
