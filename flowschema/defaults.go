package flowschema

// Defaults of flowcontrol.apiserver.k8s.io/v1 (k8s.io/kubernetes
// pkg/apis/flowcontrol/v1/defaults.go).
const (
	DefaultMatchingPrecedence       int32 = 1000
	DefaultNominalConcurrencyShares int32 = 30
	DefaultQueues                   int32 = 64
	DefaultHandSize                 int32 = 8
	DefaultQueueLengthLimit         int32 = 50
	DefaultLendablePercent          int32 = 0
)

// SetDefaults fills unset fields of fs as the API server does on create.
func (fs *FlowSchema) SetDefaults() {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

// SetDefaults fills unset fields of pl as the API server does on create:
// shares 30 (0 for exempt), lendablePercent 0, and for queuing 64 queues,
// hand size 8 and queue length limit 50. borrowingLimitPercent has no
// default (nil means unlimited).
func (pl *PriorityLevelConfiguration) SetDefaults() {
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = Int32(0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = Int32(DefaultLendablePercent)
		}
	}
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = Int32(DefaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = Int32(DefaultLendablePercent)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = DefaultHandSize
			}
			if q.Queues == 0 {
				q.Queues = DefaultQueues
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = DefaultQueueLengthLimit
			}
		}
	}
}

// SetDefaults defaults every object of c in place.
func (c *Config) SetDefaults() {
	for i := range c.FlowSchemas {
		c.FlowSchemas[i].SetDefaults()
	}
	for i := range c.PriorityLevels {
		c.PriorityLevels[i].SetDefaults()
	}
}
