package apfcompare

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"k8s.io/client-go/informers"
	fcinformers "k8s.io/client-go/informers/flowcontrol"
	fcv1informers "k8s.io/client-go/informers/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	kubeflowcontrol "github.com/fairslice/fairslice/kube/flowcontrol"
)

// The drivers through utilflowcontrol.Interface do not call the
// controllers' Run. Its worker goroutine digests the configuration
// whenever an informer event or a quiescing level that became idle queues
// a work item, at moments that race with the requests the driver sends
// next, and every digest runs a borrowing adjustment; Run's periodic
// adjustment ticks on real time. Instead, configWorker runs a controller's
// worker step by hand: after each event of a scenario the driver digests
// exactly the work items that event queued, so that both sides digest the
// same configurations at the same points of the scenario.

// upstreamProcessNextWorkItem is one step of upstream's configuration
// worker (*configController).processNextWorkItem: it takes the work item,
// digests the informers' objects and marks the item done.
//
//go:linkname upstreamProcessNextWorkItem k8s.io/apiserver/pkg/util/flowcontrol.(*configController).processNextWorkItem
func upstreamProcessNextWorkItem(cfgCtlr unsafe.Pointer) bool

// oursProcessNextWorkItem is kube/flowcontrol's counterpart.
//
//go:linkname oursProcessNextWorkItem github.com/fairslice/fairslice/kube/flowcontrol.(*Controller).processNextWorkItem
func oursProcessNextWorkItem(c *kubeflowcontrol.Controller) bool

// configWorker is a controller's configuration work queue, the step that
// processes one item of it, and the registrations of the controller's
// informer event handlers.
type configWorker struct {
	tb      testing.TB
	queue   workqueue.TypedRateLimitingInterface[int]
	process func() bool
	regs    *[]cache.ResourceEventHandlerRegistration
}

// newConfigWorker finds the work queue of ctl (upstream's
// *configController or a *kubeflowcontrol.Controller) in its field
// queueField; regs are the registrations recorded by a handlerRecorder.
func newConfigWorker(tb testing.TB, ctl any, queueField string, process func() bool, regs *[]cache.ResourceEventHandlerRegistration) *configWorker {
	f := reflect.ValueOf(ctl).Elem().FieldByName(queueField)
	if !f.IsValid() {
		tb.Fatalf("%T has no field %s", ctl, queueField)
	}
	q, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(workqueue.TypedRateLimitingInterface[int])
	if !ok {
		tb.Fatalf("%T.%s is a %s, not a workqueue.TypedRateLimitingInterface[int]", ctl, queueField, f.Type())
	}
	return &configWorker{tb: tb, queue: q, process: process, regs: regs}
}

// awaitHandlersSynced waits until the controller's two event handlers
// (FlowSchemas, priority levels) have been called for every object the
// informers listed at the start.
func (w *configWorker) awaitHandlersSynced() {
	if len(*w.regs) != 2 {
		w.tb.Fatalf("the controller added %d informer event handlers, want 2", len(*w.regs))
	}
	w.await(func() bool {
		for _, r := range *w.regs {
			if !r.HasSynced() {
				return false
			}
		}
		return true
	}, "the controller's informer handlers to sync")
}

// awaitQueued waits until an informer event handler has queued a work
// item for a change just made through the clientset.
func (w *configWorker) awaitQueued() {
	w.await(func() bool { return w.queue.Len() > 0 }, "the configuration change to be queued")
}

// drain processes the queued work items, one digest per item, until none
// is left. A work item queued again by a digest (a retry after an error,
// or held-back status writes) would come back only after a real-time
// delay; scenarios never reach those cases.
func (w *configWorker) drain() {
	for w.queue.Len() > 0 {
		w.process()
	}
}

// change makes one configuration change and digests it.
func (w *configWorker) change(do func() error) {
	if err := do(); err != nil {
		w.tb.Fatal(err)
	}
	w.awaitQueued()
	w.drain()
}

func (w *configWorker) await(cond func() bool, what string) {
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.tb.Fatalf("timed out after 20s waiting for %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// close shuts the work queue down (Run would at its end).
func (w *configWorker) close() { w.queue.ShutDown() }

// handlerRecorder is an informer factory that records the registrations
// of the event handlers added to its FlowSchema and
// PriorityLevelConfiguration informers, so that the driver can tell when
// the controller's handlers have seen the initial objects.
type handlerRecorder struct {
	informers.SharedInformerFactory
	regs *[]cache.ResourceEventHandlerRegistration
}

func (f handlerRecorder) Flowcontrol() fcinformers.Interface {
	return recordingGroup{f.SharedInformerFactory.Flowcontrol(), f.regs}
}

type recordingGroup struct {
	fcinformers.Interface
	regs *[]cache.ResourceEventHandlerRegistration
}

func (g recordingGroup) V1() fcv1informers.Interface { return recordingV1{g.Interface.V1(), g.regs} }

type recordingV1 struct {
	fcv1informers.Interface
	regs *[]cache.ResourceEventHandlerRegistration
}

func (v recordingV1) FlowSchemas() fcv1informers.TypedFlowSchemaInformer {
	return recordingFS{v.Interface.FlowSchemas(), v.regs}
}

func (v recordingV1) PriorityLevelConfigurations() fcv1informers.TypedPriorityLevelConfigurationInformer {
	return recordingPL{v.Interface.PriorityLevelConfigurations(), v.regs}
}

type recordingFS struct {
	fcv1informers.TypedFlowSchemaInformer
	regs *[]cache.ResourceEventHandlerRegistration
}

func (i recordingFS) Informer() cache.SharedIndexInformer {
	return recordingInformer{i.TypedFlowSchemaInformer.Informer(), i.regs}
}

type recordingPL struct {
	fcv1informers.TypedPriorityLevelConfigurationInformer
	regs *[]cache.ResourceEventHandlerRegistration
}

func (i recordingPL) Informer() cache.SharedIndexInformer {
	return recordingInformer{i.TypedPriorityLevelConfigurationInformer.Informer(), i.regs}
}

type recordingInformer struct {
	cache.SharedIndexInformer
	regs *[]cache.ResourceEventHandlerRegistration
}

func (i recordingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	r, err := i.SharedIndexInformer.AddEventHandler(h)
	if err == nil {
		*i.regs = append(*i.regs, r)
	}
	return r, err
}
