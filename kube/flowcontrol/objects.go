package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	fcboot "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// objects are the informers' FlowSchemas and priority levels by name, as
// noteFn receives them. Mandatory objects missing from the informers are
// upstream's bootstrap ones, which upstream's controller also hands to
// noteFn when it imagines them. Immutable once built.
type objects struct {
	fs map[string]*flowcontrolv1.FlowSchema
	pl map[string]*flowcontrolv1.PriorityLevelConfiguration
}

func newObjects(pls []*flowcontrolv1.PriorityLevelConfiguration, fss []*flowcontrolv1.FlowSchema) *objects {
	o := &objects{
		fs: make(map[string]*flowcontrolv1.FlowSchema, len(fss)+2),
		pl: make(map[string]*flowcontrolv1.PriorityLevelConfiguration, len(pls)+2),
	}
	for _, fs := range fss {
		o.fs[fs.Name] = fs
	}
	for _, pl := range pls {
		o.pl[pl.Name] = pl
	}
	for _, fs := range fcboot.MandatoryFlowSchemas {
		if o.fs[fs.Name] == nil {
			o.fs[fs.Name] = fs
		}
	}
	for _, pl := range fcboot.MandatoryPriorityLevelConfigurations {
		if o.pl[pl.Name] == nil {
			o.pl[pl.Name] = pl
		}
	}
	return o
}

// union returns the objects of o and, for names o lacks, of prev: the
// view for requests classified while a configuration is being swapped.
func (o *objects) union(prev *objects) *objects {
	u := &objects{fs: make(map[string]*flowcontrolv1.FlowSchema, len(o.fs)), pl: make(map[string]*flowcontrolv1.PriorityLevelConfiguration, len(o.pl))}
	for _, m := range []*objects{prev, o} {
		for k, v := range m.fs {
			u.fs[k] = v
		}
		for k, v := range m.pl {
			u.pl[k] = v
		}
	}
	return u
}

// flowSchema returns the object named name, or one carrying only the
// name if it has just gone (a request classified by the configuration
// before).
func (o *objects) flowSchema(name string) *flowcontrolv1.FlowSchema {
	if fs := o.fs[name]; fs != nil {
		return fs
	}
	fs := &flowcontrolv1.FlowSchema{}
	fs.Name = name
	return fs
}

func (o *objects) priorityLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	if pl := o.pl[name]; pl != nil {
		return pl
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{}
	pl.Name = name
	return pl
}
