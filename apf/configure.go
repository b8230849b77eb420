package apf

import (
	"fmt"
	"slices"
	"time"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// snapshot is an immutable view of the configuration for the request path.
type snapshot struct {
	cls        *flowschema.Classifier
	levels     []*level // by flowschema.Decision.LevelIndex
	schemaUIDs []string // by flowschema.Decision.SchemaIndex
}

// Reconfigure replaces the FlowSchemas and priority levels (nil: the
// bootstrap configuration), checked and completed as New does. Priority
// levels that stay keep their queues and requests; new ones start empty;
// removed ones quiesce. It recomputes every level's limits and runs a
// borrowing adjustment, as upstream does on every configuration change. On
// error (a configuration New would refuse) nothing changes: the previous
// configuration stays in force.
func (c *Controller) Reconfigure(objects *flowschema.Config) error {
	_, err := c.Apply(objects)
	return err
}

// Apply is Reconfigure returning the findings of the new configuration
// (see Findings) for the caller to log.
func (c *Controller) Apply(objects *flowschema.Config) ([]flowschema.Finding, error) {
	if objects == nil {
		objects = flowschema.DefaultConfig()
	}
	if !c.lenient {
		validate := flowschema.Validate
		if c.asStored {
			validate = flowschema.ValidateAsStored
		}
		if err := validate(objects); err != nil {
			return nil, fmt.Errorf("apf: configuration refused: %w", err)
		}
		objects = flowschema.WithMandatory(objects)
	}
	cls, err := flowschema.CompileWith(objects, flowschema.CompileOptions{AsStored: c.asStored})
	if err != nil {
		return nil, err
	}
	findings := cls.Lint()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.digestLocked(c.clock.Now(), cls, objects.DeepCopy()); err != nil {
		return nil, err
	}
	c.findings = findings
	return slices.Clone(findings), nil
}

// Findings returns what flowschema's Lint finds in the configuration in
// force: FlowSchemas upstream skips (dangling) or can never select
// (shadowed, never-matches), and priority levels it ignores or no
// FlowSchema reaches. None stops the configuration from being used, as
// none stops upstream; they are mistakes worth logging.
func (c *Controller) Findings() []flowschema.Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.findings)
}

func (c *Controller) digestLocked(now time.Time, cls *flowschema.Classifier, objects *flowschema.Config) error {
	pls := cls.PriorityLevels()
	// The only errors ComputeLimits has left after Compile come from the
	// shares; check them before changing anything.
	if _, err := seats.ComputeLimits(c.total, pls); err != nil {
		return fmt.Errorf("apf: %w", err)
	}
	next := make(map[string]*level, len(pls))
	snap := &snapshot{cls: cls, levels: make([]*level, len(pls))}
	var created []*level
	for i := range pls {
		pl := &pls[i]
		lv := c.levels[pl.Name]
		if lv == nil {
			var err error
			lv, err = newLevel(c, now, pl, queueConfig(pl, 0, c.base))
			if err != nil {
				// Compile keeps only levels whose queuing config deals.
				panic(fmt.Sprintf("apf: priority level %q: %v", pl.Name, err))
			}
			created = append(created, lv)
		} else {
			lv.spec = *pl
			lv.mu.Lock()
			lv.quiescing = false
			lv.mu.Unlock()
		}
		next[pl.Name] = lv
		snap.levels[i] = lv
	}
	for name, lv := range c.levels {
		if next[name] != nil {
			continue
		}
		lv.mu.Lock()
		if lv.qs.IsIdle() {
			lv.removed = true
			lv.mu.Unlock()
			c.retry.Forget(name)
			c.obs.LevelRemoved(name)
			continue
		}
		lv.quiescing = true
		lv.mu.Unlock()
		next[name] = lv
	}
	fss := cls.FlowSchemas()
	snap.schemaUIDs = make([]string, len(fss))
	for i := range fss {
		snap.schemaUIDs[i] = schemaUID(&fss[i])
	}
	c.levels = next
	c.objects = objects
	c.planLocked(now, true, created)
	c.snap.Store(snap)
	return nil
}

// sortedLevels returns the live levels in name order.
func (c *Controller) sortedLevels() []*level {
	out := make([]*level, 0, len(c.levels))
	for _, lv := range c.levels {
		out = append(out, lv)
	}
	slices.SortFunc(out, func(a, b *level) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out
}

// maybeReap drops a quiescing level that has become idle, and re-divides
// the concurrency among the rest (upstream re-digests its configuration).
func (c *Controller) maybeReap(lv *level) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lv.mu.Lock()
	if !lv.quiescing || lv.removed || !lv.qs.IsIdle() || c.levels[lv.name] != lv {
		lv.mu.Unlock()
		return
	}
	lv.removed = true
	lv.mu.Unlock()
	delete(c.levels, lv.name)
	c.retry.Forget(lv.name)
	c.obs.LevelRemoved(lv.name)
	c.planLocked(c.clock.Now(), true, nil)
}
