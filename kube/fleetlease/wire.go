package fleetlease

import (
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/seats"
)

// wireSummary is the annotation's JSON: fleet.Summary with short keys,
// zero fields left out, and each flow's level by index, so that a
// server's summary (a dozen levels, fleet.MaxTopFlows flows) stays under
// MaxSummaryBytes. Numbers keep their full precision.
type wireSummary struct {
	Replica string      `json:"r"`
	Period  uint64      `json:"p"`
	Server  int         `json:"scl,omitempty"`
	Levels  []wireLevel `json:"l,omitempty"`
	Flows   []wireFlow  `json:"f,omitempty"`
}

type wireLevel struct {
	Name          string  `json:"n"`
	CurrentCL     int     `json:"c,omitempty"`
	Exempt        bool    `json:"e,omitempty"`
	Queuing       bool    `json:"q,omitempty"`
	Shares        int32   `json:"sh,omitempty"`
	NominalCL     int     `json:"nc,omitempty"`
	LendableCL    int     `json:"lc,omitempty"`
	BorrowingCL   int     `json:"bc,omitempty"`
	MinCL         int     `json:"mn,omitempty"`
	MaxCL         int     `json:"mx,omitempty"`
	MaxSeats      int     `json:"ms,omitempty"`
	InitialCL     int     `json:"ic,omitempty"`
	HighWatermark int     `json:"hw,omitempty"`
	Average       float64 `json:"av,omitempty"`
	StdDev        float64 `json:"sd,omitempty"`
	Smoothed      float64 `json:"sm,omitempty"`
}

type wireFlow struct {
	Level  int     `json:"l"` // index in Levels; -1 with LevelName
	Name   string  `json:"ln,omitempty"`
	Flow   string  `json:"f"`
	Seats  float64 `json:"s,omitempty"`
	Demand float64 `json:"d,omitempty"`
}

func toWire(s fleet.Summary) wireSummary {
	w := wireSummary{Replica: s.Replica, Period: s.Period, Server: s.ServerConcurrencyLimit}
	index := map[string]int{}
	for i, l := range s.Levels {
		index[l.Name] = i
		m, d := l.Limits, l.Demand
		w.Levels = append(w.Levels, wireLevel{Name: l.Name, CurrentCL: l.CurrentCL, Exempt: m.Exempt, Queuing: m.Queuing, Shares: m.Shares,
			NominalCL: m.NominalCL, LendableCL: m.LendableCL, BorrowingCL: m.BorrowingCL, MinCL: m.MinCL, MaxCL: m.MaxCL,
			MaxSeats: m.MaxSeats, InitialCL: m.InitialCL,
			HighWatermark: d.HighWatermark, Average: d.Average, StdDev: d.StdDev, Smoothed: d.Smoothed})
	}
	for _, f := range s.Flows {
		wf := wireFlow{Level: -1, Name: f.Level, Flow: f.Flow, Seats: f.Seats, Demand: f.Demand}
		if i, ok := index[f.Level]; ok {
			wf.Level, wf.Name = i, ""
		}
		w.Flows = append(w.Flows, wf)
	}
	return w
}

func fromWire(w wireSummary) fleet.Summary {
	s := fleet.Summary{Replica: w.Replica, Period: w.Period, ServerConcurrencyLimit: w.Server}
	for _, l := range w.Levels {
		s.Levels = append(s.Levels, fleet.LevelDemand{Name: l.Name, CurrentCL: l.CurrentCL,
			Limits: seats.LevelLimits{Name: l.Name, Exempt: l.Exempt, Queuing: l.Queuing, Shares: l.Shares,
				NominalCL: l.NominalCL, LendableCL: l.LendableCL, BorrowingCL: l.BorrowingCL, MinCL: l.MinCL, MaxCL: l.MaxCL,
				MaxSeats: l.MaxSeats, InitialCL: l.InitialCL},
			Demand: seats.SeatDemand{HighWatermark: l.HighWatermark, Average: l.Average, StdDev: l.StdDev, Smoothed: l.Smoothed}})
	}
	for _, f := range w.Flows {
		level := f.Name
		if f.Level >= 0 && f.Level < len(w.Levels) {
			level = w.Levels[f.Level].Name
		}
		s.Flows = append(s.Flows, fleet.FlowDemand{Level: level, Flow: f.Flow, Seats: f.Seats, Demand: f.Demand})
	}
	return s
}
