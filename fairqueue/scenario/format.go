package scenario

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Write writes s in the scenario file format, one request per line, with
// every request field present. Parse(Write(s)) yields s again.
func Write(w io.Writer, s *Scenario) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"config\": %s,\n \"requests\": [", configJSON(s.Config))
	for i, r := range s.Requests {
		if i > 0 {
			bw.WriteString(",")
		}
		id, _ := json.Marshal(r.ID)
		fmt.Fprintf(bw, "\n  {\"id\": %s, \"arrival\": %q, \"hash\": %d, \"initialSeats\": %d, \"finalSeats\": %d, \"additionalLatency\": %q, \"duration\": %q, \"waitLimit\": %q}",
			id, dur(r.Arrival), r.Hash, r.InitialSeats, r.FinalSeats, dur(r.AdditionalLatency), dur(r.Duration), dur(r.WaitLimit))
	}
	bw.WriteString("]")
	if len(s.Reconfigurations) > 0 {
		bw.WriteString(",\n \"reconfigurations\": [")
		for i, rc := range s.Reconfigurations {
			if i > 0 {
				bw.WriteString(",")
			}
			fmt.Fprintf(bw, "\n  {\"at\": %q, \"config\": %s}", dur(rc.At), configJSON(rc.Config))
		}
		bw.WriteString("]")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

func configJSON(c Config) string {
	// The extension fields are written only when set, so that files
	// without them come out as before.
	fix := ""
	for _, name := range c.Options() {
		fix += `, "` + name + `": true`
	}
	return fmt.Sprintf(`{"queues": %d, "handSize": %d, "queueLengthLimit": %d, "concurrencyLimit": %d%s}`,
		c.Queues, c.HandSize, c.QueueLengthLimit, c.ConcurrencyLimit, fix)
}

func dur(d time.Duration) string { return d.String() }
