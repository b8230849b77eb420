// Package upstreamfs runs Kubernetes' own API Priority and Fairness
// controller (k8s.io/apiserver v0.37.2 pkg/util/flowcontrol, built with
// NewTestable on a fake clientset) as a classification oracle for a
// flowschema.Config, so that "fairslice classify --upstream", the
// differential tests and the side-by-side benchmarks all ask upstream the
// same way.
//
// Start converts the configuration to k8s.io/api flowcontrol/v1 objects by
// a JSON round trip (the field names are the same), applies the v1 defaults
// to it first (the fake clientset does no defaulting, and upstream's
// controller dereferences the defaulted fields), loads the objects into a
// fake clientset, starts the informers and the controller's worker, and
// waits until the controller has written the Dangling status condition of
// every FlowSchema: that write happens when the configuration is digested.
// The writes are acknowledged but not stored.
//
// Classify calls Handle and stops it from inside the note function (by
// panicking with a private value that Classify recovers), so upstream
// classifies — matching, the catch-all fallback, the flow distinguisher and
// hash — but queues and executes nothing. At that point upstream holds only
// its read lock, released by a deferred call, and has changed nothing.
package upstreamfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/flowschema"
)

// Result is upstream's classification of a request.
type Result struct {
	FlowSchema    string `json:"flowSchema"`
	PriorityLevel string `json:"priorityLevel"`
	Distinguisher string `json:"distinguisher"`
}

// Oracle is a running upstream APF controller. Classify is safe for
// concurrent use; Close stops it.
type Oracle struct {
	ctl  flowcontrol.Interface
	stop chan struct{}
	once sync.Once
}

var silenceOnce sync.Once

// ReadyTimeout bounds how long Start waits for the controller.
const ReadyTimeout = 20 * time.Second

// Start loads cfg (after v1 defaulting) into a new upstream controller for
// a server concurrency limit and waits until it has digested it.
func Start(cfg *flowschema.Config, serverConcurrency int) (*Oracle, error) {
	silenceOnce.Do(func() { klog.SetLogger(logr.Discard()) })
	cfg = cfg.DeepCopy()
	cfg.SetDefaults()
	objs, fsNames, err := Objects(cfg)
	if err != nil {
		return nil, err
	}
	client := fake.NewSimpleClientset(objs...)
	// Acknowledge the controller's status writes without storing them:
	// stored, each would send a watch event, and a thousand FlowSchemas
	// overflow the fake watcher's buffer (it panics "channel full"). The
	// actions are still recorded, which is what ready looks for.
	client.PrependReactor("patch", "flowschemas", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, &flowcontrolv1.FlowSchema{}, nil
		}
		return false, nil, nil
	})
	inf := informers.NewSharedInformerFactory(client, 0)
	clk := eventclock.Real{}
	ctl := flowcontrol.NewTestable(flowcontrol.TestableConfig{
		Name:                   "fairslice-oracle",
		Clock:                  clk,
		AsFieldManager:         flowcontrol.ConfigConsumerAsFieldManager,
		FoundToDangling:        func(found bool) bool { return !found },
		InformerFactory:        inf,
		FlowcontrolClient:      client.FlowcontrolV1(),
		ServerConcurrencyLimit: serverConcurrency,
		ReqsGaugeVec:           metrics.PriorityLevelConcurrencyGaugeVec,
		ExecSeatsGaugeVec:      metrics.PriorityLevelExecutionSeatsGaugeVec,
		QueueSetFactory:        queueset.NewQueueSetFactory(clk),
	})
	o := &Oracle{ctl: ctl, stop: make(chan struct{})}
	inf.Start(o.stop)
	deadline := time.Now().Add(ReadyTimeout)
	fsInf := inf.Flowcontrol().V1().FlowSchemas().Informer()
	plInf := inf.Flowcontrol().V1().PriorityLevelConfigurations().Informer()
	for !fsInf.HasSynced() || !plInf.HasSynced() {
		if time.Now().After(deadline) {
			o.Close()
			return nil, errors.New("upstreamfs: informers did not sync")
		}
		time.Sleep(time.Millisecond)
	}
	go func() { _ = ctl.Run(o.stop) }()
	for !o.ready(client, fsNames) {
		if time.Now().After(deadline) {
			o.Close()
			return nil, errors.New("upstreamfs: the controller did not digest the configuration in time")
		}
		time.Sleep(time.Millisecond)
	}
	return o, nil
}

// ready reports whether every FlowSchema's status has been written (or,
// with no FlowSchemas, whether a request is classified at all).
func (o *Oracle) ready(client *fake.Clientset, fsNames []string) bool {
	if len(fsNames) == 0 {
		_, err := o.classify(&flowschema.Request{User: "probe", Groups: []string{flowschema.GroupAuthenticated}, Verb: "get", Path: "/"})
		return err == nil
	}
	patched := map[string]bool{}
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "flowschemas" && a.GetSubresource() == "status" {
			if p, ok := a.(interface{ GetName() string }); ok {
				patched[p.GetName()] = true
			}
		}
	}
	for _, n := range fsNames {
		if !patched[n] {
			return false
		}
	}
	return true
}

// Objects converts cfg to upstream API objects with empty status.
func Objects(cfg *flowschema.Config) (objs []runtime.Object, fsNames []string, err error) {
	for i := range cfg.PriorityLevels {
		var pl flowcontrolv1.PriorityLevelConfiguration
		if err := convert(&cfg.PriorityLevels[i], &pl); err != nil {
			return nil, nil, err
		}
		pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
		objs = append(objs, &pl)
	}
	for i := range cfg.FlowSchemas {
		var fs flowcontrolv1.FlowSchema
		if err := convert(&cfg.FlowSchemas[i], &fs); err != nil {
			return nil, nil, err
		}
		fs.Status = flowcontrolv1.FlowSchemaStatus{}
		objs = append(objs, &fs)
		fsNames = append(fsNames, fs.Name)
	}
	return objs, fsNames, nil
}

func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, to); err != nil {
		return fmt.Errorf("upstreamfs: converting to k8s.io/api: %w", err)
	}
	return nil
}

// Close stops the controller and its informers.
func (o *Oracle) Close() { o.once.Do(func() { close(o.stop) }) }

type stopHere struct{}

// Classify returns upstream's classification of req. It panics if upstream
// panics for another reason than the oracle's own stop.
func (o *Oracle) Classify(req *flowschema.Request) Result {
	r, err := o.classify(req)
	if err != nil {
		panic(err)
	}
	return r
}

func (o *Oracle) classify(req *flowschema.Request) (res Result, err error) {
	digest := Digest(req)
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stopHere); !ok {
				err = fmt.Errorf("upstreamfs: upstream panicked: %v", p)
			}
		}
	}()
	o.ctl.Handle(context.Background(), digest, func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, d string) {
		res = Result{FlowSchema: fs.Name, PriorityLevel: pl.Name, Distinguisher: d}
		panic(stopHere{})
	}, func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} }, func(bool) {}, func() {})
	return res, errors.New("upstreamfs: Handle returned without calling the note function")
}

// Digest builds upstream's request digest for req.
func Digest(req *flowschema.Request) flowcontrol.RequestDigest {
	return flowcontrol.RequestDigest{
		RequestInfo: &genericrequest.RequestInfo{
			IsResourceRequest: req.ResourceRequest,
			Path:              req.Path,
			Verb:              req.Verb,
			APIGroup:          req.APIGroup,
			Namespace:         req.Namespace,
			Resource:          req.Resource,
			Subresource:       req.Subresource,
			Name:              req.Name,
		},
		User: &user.DefaultInfo{Name: req.User, Groups: req.Groups},
	}
}

// HandleStopped runs upstream's Handle for a prepared digest up to the
// note function and returns the FlowSchema name, for benchmarks: the cost
// measured is startRequest's classification (lock, linear match, fallback,
// distinguisher, flow hash) plus the panic that stops it.
func (o *Oracle) HandleStopped(digest flowcontrol.RequestDigest, note func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, d string)) {
	defer func() { _ = recover() }()
	o.ctl.Handle(context.Background(), digest, note, nil, nil, nil)
}

// Stop is the value a note function passed to HandleStopped panics with.
func Stop() { panic(stopHere{}) }

// MaxSeats returns upstream's per-request seat cap for a level.
func (o *Oracle) MaxSeats(level string) uint64 { return o.ctl.GetMaxSeats(level) }
