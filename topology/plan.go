package topology

import (
	"time"

	"github.com/fairslice/fairslice/slicer"
)

// TypeResult is the outcome of the topology step for one address type.
type TypeResult struct {
	AddressType slicer.AddressType
	Result
}

// HintPlan runs the reconciler's topology step on a plan made by
// slicer.Reconcile (with Service.TopologyHints set, so that the slicer
// leaves hints to this step), one address type at a time in the order
// IPv4, IPv6, FQDN, as upstream does after packing each address type:
// Auto hints, trafficDistribution hints or hint removal, per policy. It
// sets hints in place on p.Creates and p.Updates, and rewrites unchanged
// slices whose hints must change with p.MoveToUpdates (which appends them to
// p.Updates with triggerTime, the Service's trigger time, as upstream
// writes every updated slice).
//
// hadHints (opts.HadHints) is whether the Service held Auto hints before
// (upstream keeps it per Service in its TopologyCache); the returned bool
// is that state after this sync, to pass next time. Upstream hints its
// slices to create before recycling some of them into updates, so when
// creates were recycled the endpoints chosen to serve another zone can
// differ from upstream's; the counts per zone and the slices written do
// not.
func HintPlan(c Capacity, p *slicer.Plan, triggerTime time.Time, policy Policy, opts Options) ([]TypeResult, bool) {
	var out []TypeResult
	had := opts.HadHints
	for _, at := range []slicer.AddressType{slicer.IPv4, slicer.IPv6, slicer.FQDN} {
		si := SliceInfo{AddressType: string(at)}
		for i := range p.Creates {
			if p.Creates[i].AddressType == at {
				si.ToCreate = append(si.ToCreate, &p.Creates[i])
			}
		}
		for i := range p.Updates {
			if p.Updates[i].AddressType == at {
				si.ToUpdate = append(si.ToUpdate, &p.Updates[i])
			}
		}
		updates := len(si.ToUpdate)
		for i := range p.Unchanged {
			if p.Unchanged[i].AddressType == at {
				si.Unchanged = append(si.Unchanged, &p.Unchanged[i])
			}
		}
		if len(si.ToCreate)+len(si.ToUpdate)+len(si.Unchanged) == 0 {
			continue
		}
		o := opts
		o.HadHints = had
		r := Apply(c, &si, policy, o)
		out = append(out, TypeResult{AddressType: at, Result: r})
		had = policy == PolicyAuto && r.Enabled()
		// The copies Apply moved to ToUpdate become rewrites of the plan's
		// unchanged slices (names are unique among existing slices).
		for _, moved := range si.ToUpdate[updates:] {
			for i := range p.Unchanged {
				if p.Unchanged[i].Name == moved.Name && p.Unchanged[i].AddressType == at {
					k := p.MoveToUpdates(i, triggerTime)
					p.Updates[k].Endpoints = moved.Endpoints
					break
				}
			}
		}
	}
	return out, had
}
