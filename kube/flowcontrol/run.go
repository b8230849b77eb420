package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	flowcontrolapply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/flowschema"
)

// Run waits for the informers to sync, then digests the configuration on
// every change of a FlowSchema (spec or status) or a priority level
// (spec), writes each FlowSchema's Dangling condition, and runs the
// borrowing adjustment every Options.AdjustPeriod, until stopCh is closed.
// Requests are never lost across a change: levels that stay keep their
// queues, removed ones drain first. It returns after its goroutines have
// stopped; Handle keeps working with the last configuration.
func (c *Controller) Run(stopCh <-chan struct{}) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	klog.Info("Starting fairslice API Priority and Fairness config controller")
	if !cache.WaitForCacheSync(stopCh, c.plSynced, c.fsSynced) {
		return errors.New("flowcontrol: never achieved initial sync")
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		wait.Until(c.runWorker, time.Second, stopCh)
	}()
	go func() {
		defer wg.Done()
		wait.Until(func() { c.adjust(stopCh) }, c.period, stopCh)
	}()
	<-stopCh
	c.queue.ShutDown()
	wg.Wait()
	klog.Info("Shutting down fairslice API Priority and Fairness config controller")
	return nil
}

func (c *Controller) runWorker() {
	for c.processNextWorkItem() {
	}
}

func (c *Controller) processNextWorkItem() bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	delay, err := c.syncOne()
	switch {
	case err != nil:
		klog.Error(err)
		c.queue.AddRateLimited(key)
	case delay > 0:
		c.queue.AddAfter(key, delay)
	default:
		c.queue.Forget(key)
	}
	return true
}

// syncOne digests the informers' current objects.
func (c *Controller) syncOne() (time.Duration, error) {
	pls, err := c.plLister.List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("flowcontrol: listing PriorityLevelConfigurations: %w", err)
	}
	fss, err := c.fsLister.List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("flowcontrol: listing FlowSchemas: %w", err)
	}
	return c.digest(pls, fss)
}

// digest applies a configuration and writes the FlowSchemas' Dangling
// conditions that changed. It returns a delay before the next attempt when
// some writes were held back, as upstream rate-limits them.
func (c *Controller) digest(pls []*flowcontrolv1.PriorityLevelConfiguration, fss []*flowcontrolv1.FlowSchema) (time.Duration, error) {
	cfg := convertConfig(pls, fss)
	cls, err := flowschema.CompileWith(cfg, flowschema.CompileOptions{AsStored: true})
	if err != nil {
		return 0, fmt.Errorf("flowcontrol: %w", err)
	}
	next := newObjects(pls, fss)
	prev := c.objs.Load()
	c.objs.Store(next.union(prev))
	if err := c.apf.Reconfigure(cfg); err != nil {
		c.objs.Store(prev)
		return 0, fmt.Errorf("flowcontrol: %w", err)
	}
	c.objs.Store(next)
	dangling := map[string]bool{}
	for _, d := range cls.DanglingSchemas() {
		dangling[d.Name] = true
	}
	return c.writeConditions(fss, dangling)
}

// statusUpdateAttempt records which FlowSchemas one digest wrote, for
// upstream's rule of at most 5 writes per FlowSchema and minute.
type statusUpdateAttempt struct {
	at    time.Time
	names map[string]bool
}

func (c *Controller) writeConditions(fss []*flowcontrolv1.FlowSchema, dangling map[string]bool) (time.Duration, error) {
	now := c.clock.Now()
	attempt := statusUpdateAttempt{at: now, names: map[string]bool{}}
	var errs []error
	var delay time.Duration
	for _, fs := range fss {
		cond, ok := wantCondition(fs, dangling[fs.Name])
		if !ok {
			continue
		}
		if c.tooManyUpdates(now, fs.Name) {
			if delay == 0 {
				delay = time.Duration(30+c.rng.IntN(45)) * time.Second
			}
			continue
		}
		attempt.names[fs.Name] = true
		cond.LastTransitionTime = metav1.NewTime(now)
		if err := c.applyCondition(fs.Name, cond); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("flowcontrol: setting the Dangling condition of FlowSchema %q: %w", fs.Name, err))
		}
	}
	c.recent = append([]statusUpdateAttempt{attempt}, c.recent...)
	return delay, errors.Join(errs...)
}

// wantCondition returns the Dangling condition fs should have, and
// whether it differs from the one it has (status, reason or message).
func wantCondition(fs *flowcontrolv1.FlowSchema, isDangling bool) (flowcontrolv1.FlowSchemaCondition, bool) {
	plName := fs.Spec.PriorityLevelConfiguration.Name
	want := flowcontrolv1.FlowSchemaCondition{
		Type:    flowcontrolv1.FlowSchemaConditionDangling,
		Status:  flowcontrolv1.ConditionFalse,
		Reason:  "Found",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", plName),
	}
	if isDangling {
		want.Status, want.Reason = flowcontrolv1.ConditionTrue, "NotFound"
		want.Message = fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", plName)
	}
	for _, have := range fs.Status.Conditions {
		if have.Type == flowcontrolv1.FlowSchemaConditionDangling {
			return want, have.Status != want.Status || have.Reason != want.Reason || have.Message != want.Message
		}
	}
	return want, true
}

// tooManyUpdates reports whether name was written more than 5 times in
// the last minute, dropping the attempts older than that.
func (c *Controller) tooManyUpdates(now time.Time, name string) bool {
	n := 0
	for i, a := range c.recent {
		if now.Sub(a.at) > time.Minute {
			c.recent = c.recent[:i]
			return false
		}
		if a.names[name] {
			if n++; n > 5 {
				return true
			}
		}
	}
	return false
}

// applyCondition writes cond with server-side apply, as upstream's field
// manager, forcing ownership.
func (c *Controller) applyCondition(name string, cond flowcontrolv1.FlowSchemaCondition) error {
	ac := flowcontrolapply.FlowSchema(name).WithStatus(flowcontrolapply.FlowSchemaStatus().WithConditions(
		flowcontrolapply.FlowSchemaCondition().
			WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).
			WithLastTransitionTime(cond.LastTransitionTime).WithMessage(cond.Message)))
	_, err := c.client.FlowSchemas().ApplyStatus(context.TODO(), ac, metav1.ApplyOptions{FieldManager: c.fieldManager, Force: true})
	return err
}
