package seats

import (
	"testing"

	"github.com/fairslice/fairslice/flowschema"
)

func limitedLevel(name string, shares, lendable, borrowing int32) flowschema.PriorityLevelConfiguration {
	pl := flowschema.PriorityLevelConfiguration{Spec: flowschema.PriorityLevelConfigurationSpec{
		Type: flowschema.PriorityLevelTypeLimited,
		Limited: &flowschema.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares, LendablePercent: &lendable,
			BorrowingLimitPercent: &borrowing, LimitResponse: flowschema.LimitResponse{Type: flowschema.LimitResponseReject}}}}
	pl.Name = name
	return pl
}

// TestComputeKeepsLimitsWhenTheAllocationFails: upstream divides all of
// the nominal sum, the exempt level's share included; levels that may
// borrow nothing cannot take it, the fair allocation fails, and each level
// keeps the limit in force, a new level its InitialCL.
func TestComputeKeepsLimitsWhenTheAllocationFails(t *testing.T) {
	shares := int32(10)
	exempt := flowschema.PriorityLevelConfiguration{Spec: flowschema.PriorityLevelConfigurationSpec{
		Type: flowschema.PriorityLevelTypeExempt, Exempt: &flowschema.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: &shares}}}
	exempt.Name = "exempt"
	p := Compute(Input{Total: 40, Levels: []LevelState{
		{Config: exempt},
		{Config: limitedLevel("a", 10, 50, 0), Current: 9},
		{Config: limitedLevel("b", 10, 50, 0), New: true},
	}})
	if p.Err == nil || p.Regime != RegimeFair {
		t.Fatalf("Compute: regime %v, err %v; want the fair allocation to fail", p.Regime, p.Err)
	}
	if a, b := p.Levels[1], p.Levels[2]; a.Current != 9 || b.Current != b.Limits.InitialCL || b.Current == 0 {
		t.Errorf("a's current %d, b's %d (InitialCL %d); want a's in force 9 and new b's InitialCL", a.Current, b.Current, b.Limits.InitialCL)
	}
}
