package topology

// RemoveHints removes every hint from the plan si, as upstream's
// RemoveHintsFromSlices does: hints are cleared in place on si.ToCreate and
// si.ToUpdate, and each unchanged slice that carries a hint is copied once,
// cleared, and moved to si.ToUpdate (in Unchanged order).
//
// Upstream copies the whole slice once per hinted endpoint, which is
// quadratic; this is O(endpoints) with one copy per moved slice.
func RemoveHints(si *SliceInfo) {
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate} {
		for _, s := range list {
			for i := range s.Endpoints {
				s.Endpoints[i].Hints = nil
			}
		}
	}
	j := 0
	for _, s := range si.Unchanged {
		if !anyHints(s) {
			si.Unchanged[j] = s
			j++
			continue
		}
		c := cloneSlice(s)
		for i := range c.Endpoints {
			c.Endpoints[i].Hints = nil
		}
		si.ToUpdate = append(si.ToUpdate, c)
	}
	si.Unchanged = si.Unchanged[:j]
}

func anyHints(s *Slice) bool {
	for i := range s.Endpoints {
		if s.Endpoints[i].Hints != nil {
			return true
		}
	}
	return false
}
