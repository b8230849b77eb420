package apfmetrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairslice/fairslice/apf"
)

// scraped collects the metrics read from the Controller at scrape time
// (current_r, epoch_advance_total): apf keeps them in its queue sets, so
// no event is needed per change of R.
type scraped struct {
	c               atomic.Pointer[apf.Controller]
	currentR, epoch *prometheus.Desc
}

func newScraped() *scraped {
	return &scraped{
		currentR: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "current_r"),
			"R(time of last change)", []string{pl}, nil),
		epoch: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "epoch_advance_total"),
			"Number of times the queueset's progress meter jumped backward", []string{pl, "success"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (s *scraped) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.currentR
	ch <- s.epoch
}

// Collect implements prometheus.Collector.
func (s *scraped) Collect(ch chan<- prometheus.Metric) {
	c := s.c.Load()
	if c == nil {
		return
	}
	for _, st := range c.Stats() {
		ch <- prometheus.MustNewConstMetric(s.currentR, prometheus.GaugeValue, st.VirtualTime.Float(), st.Name)
		ch <- prometheus.MustNewConstMetric(s.epoch, prometheus.CounterValue, float64(st.Counts.EpochAdvances), st.Name, "true")
	}
}

// Attach makes m read current_r and epoch_advance_total from c at every
// scrape (they are not events of apf.Observer). Call it once c is built
// with m as its Observer; a later call replaces the Controller, nil
// detaches.
func (m *Metrics) Attach(c *apf.Controller) { m.scraped.c.Store(c) }
