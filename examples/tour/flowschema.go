package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// flowSchemaSection prints the default configuration's concurrency limits
// at a server concurrency of 600 (kube-apiserver's default 400 + 200), then
// classifies a few requests and explains each decision.
func flowSchemaSection(w io.Writer) error {
	c, err := flowschema.Compile(flowschema.DefaultConfig())
	if err != nil {
		return err
	}
	limits, err := seats.ComputeLimits(600, c.PriorityLevels())
	if err != nil {
		return err
	}
	levels := make([]seats.BorrowingLevel, len(limits))
	for i, l := range limits {
		levels[i] = seats.BorrowingLevel{Limits: l, CurrentCL: l.InitialCL}
	}
	idle := seats.Borrow(600, levels, seats.BorrowingOptions{})
	fmt.Fprintln(w, "Seats per priority level at a server concurrency of 600 (default configuration):")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "level\tshares\tnominal\tmin\tmax\tseats/request\tcurrent when idle")
	for i, l := range limits {
		seats := "-"
		if l.Queuing {
			seats = fmt.Sprint(l.MaxSeats)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\n", l.Name, l.Shares, l.NominalCL, l.MinCL, l.MaxCL, seats, idle.Levels[i].CurrentCL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nNominal seats add up to %d (each level rounds up). With no demand yet, the\n", idle.NominalCLSum)
	fmt.Fprintln(w, "periodic adjustment divides them in proportion to each level's minimum (the")
	fmt.Fprintln(w, "seats it does not lend), so catch-all, which lends nothing, gets more than")
	fmt.Fprintln(w, "its nominal share until the other levels show demand.")

	reqs := []flowschema.Request{
		{User: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}, Verb: "patch",
			Resource: "nodes", Subresource: "status", ResourceRequest: true},
		{User: "system:serviceaccount:ci:runner", Groups: []string{"system:serviceaccounts", "system:authenticated"},
			Verb: "list", Resource: "pods", Namespace: "ci", ResourceRequest: true},
		{User: "system:anonymous", Groups: []string{"system:unauthenticated"}, Verb: "get", Path: "/readyz/etcd"},
	}
	for i := range reqs {
		e := c.Explain(&reqs[i])
		fmt.Fprintln(w)
		fmt.Fprint(w, indent(e.String()))
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}
