package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

const diffUsage = `Usage: fairslice diff [--requests FILE | --audit-log FILE] [--server-concurrency N] [-o text|json|yaml] OLD NEW

Compares two API Priority and Fairness configurations (files as for
"fairslice validate"; "-" for standard input in one of them): the
FlowSchemas and PriorityLevelConfigurations added, removed and changed
(spec after the v1 defaults), each priority level's concurrency limits
before and after at server concurrency N (default 600), and the requests
whose FlowSchema, priority level or flow distinguisher changes. The
requests come from FILE (as for "fairslice classify"), from an audit log,
or, without either, are generated to cover every rule of both
configurations: for each subject and each resource or non-resource rule,
one request that the rule matches. Each configuration must pass
"fairslice validate" unless --allow-invalid.

-o json (or yaml): {"objects": [{"kind", "name", "change" ("added",
"removed" or "changed")}], "limits": [{"name", "old": LIMITS or null,
"new": LIMITS or null}] with LIMITS {"nominal", "lendable", "borrow",
"current"}, "requests": N, "changed": [{"request": {...}, "old":
{"flowSchema", "priorityLevel", "distinguisher"}, "new": {...}}]}

Exit status: 0 no difference, 1 any difference or unreadable or invalid
input, 2 bad command line.

Flags:
`

// diffResult is the -o json shape of diff.
type diffResult struct {
	Objects  []objectChange  `json:"objects"`
	Limits   []limitsChange  `json:"limits"`
	Requests int             `json:"requests"`
	Changed  []requestChange `json:"changed"`
}

type objectChange struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Change string `json:"change"`
}

type levelLimitsBrief struct {
	Nominal  int `json:"nominal"`
	Lendable int `json:"lendable"`
	Borrow   int `json:"borrow"`
	Current  int `json:"current"`
}

type limitsChange struct {
	Name string            `json:"name"`
	Old  *levelLimitsBrief `json:"old"`
	New  *levelLimitsBrief `json:"new"`
}

type requestChange struct {
	Request flowschema.Request `json:"request"`
	Old     classification     `json:"old"`
	New     classification     `json:"new"`
}

// runDiff implements "fairslice diff".
func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	requests := fs.String("requests", "", "classify the requests of `FILE` (JSON lines, as for classify)")
	auditLog := fs.String("audit-log", "", "classify the requests of kube-apiserver audit log `FILE`")
	server := fs.Int("server-concurrency", 600, "the server's concurrency limit `N` for the limits")
	allowInvalid := fs.Bool("allow-invalid", false, "use configurations that \"fairslice validate\" refuses")
	out := outputFlag(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), diffUsage); fs.PrintDefaults() }
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	switch {
	case len(files) != 2:
		return usageError(stderr, "diff", "expected two configuration files, OLD and NEW, got %d", len(files))
	case *requests != "" && *auditLog != "":
		return usageError(stderr, "diff", "give --requests or --audit-log, not both")
	case *server <= 0:
		return usageError(stderr, "diff", "--server-concurrency must be a positive number")
	}
	var cfgs [2]*flowschema.Config
	var cls [2]*flowschema.Classifier
	for i, f := range files {
		cfg, err := loadConfig(stderr, "diff", f)
		if err == nil {
			err = checkConfig(stderr, "diff", cfg, *allowInvalid)
		}
		if err == nil {
			cls[i], err = flowschema.Compile(cfg)
		}
		if err != nil {
			return failure(stderr, "diff", fmt.Errorf("%s: %w", inputName(f), err))
		}
		cfgs[i] = cfg
	}
	reqs, err := diffRequests(stderr, *requests, *auditLog, cfgs)
	if err != nil {
		return failure(stderr, "diff", err)
	}
	res := diffResult{Objects: objectChanges(cfgs[0], cfgs[1]), Requests: len(reqs), Changed: []requestChange{}}
	if res.Limits, err = limitsChanges(cls, *server); err != nil {
		return failure(stderr, "diff", err)
	}
	res.Changed = classificationChanges(cls, reqs)
	if err := out.write(stdout, res, res.writeText); err != nil {
		return failure(stderr, "diff", err)
	}
	if len(res.Objects)+len(res.Changed) > 0 || limitsDiffer(res.Limits) {
		return exitFailure
	}
	return exitOK
}

// diffRequests returns the requests diff classifies: those of the
// requests file, or of the audit log (reporting the entries it skips), or
// by default requests covering every rule of both configurations.
func diffRequests(stderr io.Writer, requests, auditLog string, cfgs [2]*flowschema.Config) ([]flowschema.Request, error) {
	var reqs []flowschema.Request
	switch {
	case requests != "":
		data, err := readInput(requests)
		if err == nil {
			reqs, err = parseRequests(inputName(requests), data)
		}
		if err != nil {
			return nil, err
		}
	case auditLog != "":
		ars, _, problems, err := readAuditLog(auditLog)
		for _, p := range problems {
			fmt.Fprintf(stderr, "fairslice diff: skipped %s\n", p)
		}
		if err != nil {
			return nil, err
		}
		for _, a := range ars {
			reqs = append(reqs, a.Request)
		}
	default:
		reqs = append(coveringRequests(cfgs[0]), coveringRequests(cfgs[1])...)
	}
	return reqs, nil
}

// classificationChanges returns the requests, each once, that the two
// classifiers classify differently.
func classificationChanges(cls [2]*flowschema.Classifier, reqs []flowschema.Request) []requestChange {
	changed := []requestChange{}
	seen := map[string]bool{}
	for i := range reqs {
		o, n := classificationOf(cls[0].Classify(&reqs[i])), classificationOf(cls[1].Classify(&reqs[i]))
		key := fmt.Sprintf("%+v", reqs[i])
		if o == n || seen[key] {
			continue
		}
		seen[key] = true
		changed = append(changed, requestChange{Request: reqs[i], Old: o, New: n})
	}
	return changed
}

// objectChanges compares the objects of two configurations by kind and
// name, with their specs after the v1 defaults.
func objectChanges(old, new *flowschema.Config) []objectChange {
	specs := func(c *flowschema.Config) map[[2]string]any {
		m := map[[2]string]any{}
		for _, fs := range c.FlowSchemas {
			m[[2]string{flowschema.KindFS, fs.Name}] = defaultedSpec(fs)
		}
		for _, pl := range c.PriorityLevels {
			m[[2]string{flowschema.KindPL, pl.Name}] = defaultedSpec(pl)
		}
		return m
	}
	o, n := specs(old), specs(new)
	out := []objectChange{}
	for k, v := range o {
		switch nv, ok := n[k]; {
		case !ok:
			out = append(out, objectChange{k[0], k[1], "removed"})
		case nv != v:
			out = append(out, objectChange{k[0], k[1], "changed"})
		}
	}
	for k := range n {
		if _, ok := o[k]; !ok {
			out = append(out, objectChange{k[0], k[1], "added"})
		}
	}
	slices.SortFunc(out, func(a, b objectChange) int { return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) })
	return out
}

// limitsChanges lists every level of either configuration with its limits
// before and after.
func limitsChanges(cls [2]*flowschema.Classifier, server int) ([]limitsChange, error) {
	byName := map[string]*limitsChange{}
	var names []string
	for side, c := range cls {
		limits, err := seats.ComputeLimits(server, c.PriorityLevels())
		if err != nil {
			return nil, err
		}
		current := currentLimits(limits, server)
		for i, l := range limits {
			ch := byName[l.Name]
			if ch == nil {
				ch = &limitsChange{Name: l.Name}
				byName[l.Name] = ch
				names = append(names, l.Name)
			}
			b := &levelLimitsBrief{Nominal: l.NominalCL, Lendable: l.LendableCL, Borrow: l.BorrowingCL, Current: current[i]}
			if side == 0 {
				ch.Old = b
			} else {
				ch.New = b
			}
		}
	}
	out := make([]limitsChange, len(names))
	for i, n := range names {
		out[i] = *byName[n]
	}
	return out, nil
}

func limitsDiffer(l []limitsChange) bool {
	for _, c := range l {
		if c.Old == nil || c.New == nil || *c.Old != *c.New {
			return true
		}
	}
	return false
}

// coveringRequests returns, for every rule of every FlowSchema of cfg,
// one request per subject and per resource or non-resource rule, built
// from the first value of each list ("*" replaced by a concrete value).
func coveringRequests(cfg *flowschema.Config) []flowschema.Request {
	var out []flowschema.Request
	for _, fs := range cfg.FlowSchemas {
		for _, rule := range fs.Spec.Rules {
			for _, subj := range rule.Subjects {
				user, groups := subjectUser(subj)
				for _, rr := range rule.ResourceRules {
					r := flowschema.Request{User: user, Groups: groups, ResourceRequest: true,
						Verb: concrete(rr.Verbs, "get"), APIGroup: concrete(rr.APIGroups, ""), Resource: concrete(rr.Resources, "pods")}
					if r.Resource, r.Subresource, _ = strings.Cut(r.Resource, "/"); len(rr.Namespaces) > 0 {
						r.Namespace = concrete(rr.Namespaces, "default")
					}
					out = append(out, r)
				}
				for _, nr := range rule.NonResourceRules {
					path := concrete(nr.NonResourceURLs, "/")
					if p, ok := strings.CutSuffix(path, "*"); ok {
						path = p + "x"
					}
					out = append(out, flowschema.Request{User: user, Groups: groups, Verb: concrete(nr.Verbs, "get"), Path: path})
				}
			}
		}
	}
	return out
}

// concrete returns the first value of list, or def for none or "*".
func concrete(list []string, def string) string {
	if len(list) == 0 || list[0] == "*" {
		return def
	}
	return list[0]
}

// subjectUser returns a user the subject matches, authenticated.
func subjectUser(s flowschema.Subject) (string, []string) {
	groups := []string{"system:authenticated"}
	switch {
	case s.User != nil:
		return concrete([]string{s.User.Name}, "someone"), groups
	case s.Group != nil:
		if s.Group.Name != "*" {
			groups = append([]string{s.Group.Name}, groups...)
		}
		return "member-of-" + concrete([]string{s.Group.Name}, "any"), groups
	case s.ServiceAccount != nil:
		ns := s.ServiceAccount.Namespace
		return "system:serviceaccount:" + ns + ":" + concrete([]string{s.ServiceAccount.Name}, "default"),
			append([]string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, groups...)
	}
	return "someone", groups
}

func (r diffResult) writeText(w io.Writer) error {
	for _, o := range r.Objects {
		fmt.Fprintf(w, "%s %s %s\n", o.Change, o.Kind, o.Name)
	}
	if len(r.Objects) == 0 {
		fmt.Fprintln(w, "no FlowSchema or PriorityLevelConfiguration differs")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tNOMINAL\tLENDABLE\tBORROW\tCURRENT")
	cell := func(o, n *levelLimitsBrief, f func(*levelLimitsBrief) int) string {
		switch {
		case o == nil:
			return fmt.Sprintf("- → %d", f(n))
		case n == nil:
			return fmt.Sprintf("%d → -", f(o))
		case f(o) == f(n):
			return fmt.Sprint(f(o))
		}
		return fmt.Sprintf("%d → %d", f(o), f(n))
	}
	for _, l := range r.Limits {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name,
			cell(l.Old, l.New, func(b *levelLimitsBrief) int { return b.Nominal }),
			cell(l.Old, l.New, func(b *levelLimitsBrief) int { return b.Lendable }),
			cell(l.Old, l.New, func(b *levelLimitsBrief) int { return b.Borrow }),
			cell(l.Old, l.New, func(b *levelLimitsBrief) int { return b.Current }))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d of %d requests change classification\n", len(r.Changed), r.Requests)
	for _, c := range r.Changed {
		fmt.Fprintf(w, "  %s: %s → %s\n", describeRequest(&c.Request), describeClass(c.Old), describeClass(c.New))
	}
	return nil
}

func describeRequest(r *flowschema.Request) string {
	target := r.Path
	if r.ResourceRequest {
		target = r.Resource
		if r.Subresource != "" {
			target += "/" + r.Subresource
		}
		if r.APIGroup != "" {
			target += "." + r.APIGroup
		}
		if r.Namespace != "" {
			target += " in " + r.Namespace
		}
	}
	return fmt.Sprintf("%s %s %s (groups %s)", r.User, r.Verb, target, strings.Join(r.Groups, ","))
}

func describeClass(c classification) string {
	return fmt.Sprintf("%s/%s/%s", c.FlowSchema, c.PriorityLevel, orDash(c.Distinguisher))
}
