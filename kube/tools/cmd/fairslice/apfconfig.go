package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/fairslice/fairslice/flowschema"
)

// Helpers shared by the APF configuration commands (classify, explain,
// validate, lint, limits, diff).

// The kinds an APF configuration holds.
var apfKinds = []string{flowschema.KindFS, flowschema.KindPL}

// configFlags are the flags of a command that uses an APF configuration.
type configFlags struct {
	config       string
	allowInvalid bool
	cluster      clusterFlags
}

func (c *configFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "configuration `FILE` (\"-\" for standard input; default: the bootstrap configuration)")
	fs.BoolVar(&c.allowInvalid, "allow-invalid", false, "use a configuration that \"fairslice validate\" refuses")
	c.cluster.register(fs)
}

// load reads the configuration the flags name: the cluster's, the file's,
// or the bootstrap configuration; then checks it as checkConfig does.
func (c *configFlags) load(stderr io.Writer, cmd string) (*flowschema.Config, error) {
	var cfg *flowschema.Config
	var err error
	switch {
	case c.cluster.enabled():
		if c.config != "" {
			return nil, usageErr("--config and --kubeconfig exclude each other")
		}
		cfg, err = c.cluster.apfConfig()
	case c.config == "":
		cfg = flowschema.DefaultConfig()
	default:
		cfg, err = loadConfig(stderr, cmd, c.config)
	}
	if err != nil {
		return nil, err
	}
	if err := checkConfig(stderr, cmd, cfg, c.allowInvalid); err != nil {
		return nil, err
	}
	return cfg, nil
}

// usageErr is a command-line problem found after flag parsing; commands
// exit with exitUsage for it.
type usageErr string

func (e usageErr) Error() string { return string(e) }

// fail prints err and returns exitUsage for a usageErr and exitFailure
// otherwise.
func fail(stderr io.Writer, cmd string, err error) int {
	var u usageErr
	if errors.As(err, &u) {
		return usageError(stderr, cmd, "%s", u)
	}
	return failure(stderr, cmd, err)
}

// loadConfig decodes the FlowSchemas and PriorityLevelConfigurations of
// the named inputs; other objects are reported on stderr.
func loadConfig(stderr io.Writer, cmd string, names ...string) (*flowschema.Config, error) {
	objs, err := readObjects(names...)
	if err != nil {
		return nil, err
	}
	return configOf(stderr, cmd, objs)
}

// configOf decodes objs' FlowSchemas and PriorityLevelConfigurations.
func configOf(stderr io.Writer, cmd string, objs []object) (*flowschema.Config, error) {
	cfg := &flowschema.Config{}
	var errs []error
	for _, o := range pickObjects(stderr, cmd, objs, apfKinds...) {
		one, err := flowschema.Decode(o.Raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.String(), err))
			continue
		}
		cfg.FlowSchemas = append(cfg.FlowSchemas, one.FlowSchemas...)
		cfg.PriorityLevels = append(cfg.PriorityLevels, one.PriorityLevels...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(cfg.FlowSchemas)+len(cfg.PriorityLevels) == 0 {
		return nil, errors.New("no FlowSchema or PriorityLevelConfiguration in the input")
	}
	return cfg, nil
}

// checkConfig refuses a configuration that flowschema.Validate refuses,
// unless allowInvalid (then it warns), and warns about every object the
// API server's configuration ensurer would revert to its bootstrap spec.
func checkConfig(stderr io.Writer, cmd string, cfg *flowschema.Config, allowInvalid bool) error {
	for _, w := range revertedObjects(cfg) {
		fmt.Fprintf(stderr, "fairslice %s: warning: %s\n", cmd, w)
	}
	err := flowschema.Validate(cfg)
	if err == nil {
		return nil
	}
	if !allowInvalid {
		return fmt.Errorf("the configuration is invalid (run \"fairslice validate\"; --allow-invalid uses it anyway):\n%w", err)
	}
	fmt.Fprintf(stderr, "fairslice %s: warning: using an invalid configuration (--allow-invalid):\n%v\n", cmd, err)
	return nil
}

// revertedObjects lists the objects whose spec the API server would
// overwrite with its bootstrap spec (kubernetes pkg/registry/flowcontrol/
// ensurer): a mandatory object always, a suggested one when its
// apf.kubernetes.io/autoupdate-spec annotation is true, or is missing or
// not a boolean and metadata.generation is 1.
func revertedObjects(cfg *flowschema.Config) []string {
	var out []string
	mandatoryFS, suggestedFS := specsByName(flowschema.MandatoryFlowSchemas()), specsByName(flowschema.SuggestedFlowSchemas())
	for _, fs := range cfg.FlowSchemas {
		if w := revertReason(flowschema.KindFS, fs.ObjectMeta, defaultedSpec(fs), mandatoryFS, suggestedFS); w != "" {
			out = append(out, w)
		}
	}
	mandatoryPL, suggestedPL := specsByName(flowschema.MandatoryPriorityLevels()), specsByName(flowschema.SuggestedPriorityLevels())
	for _, pl := range cfg.PriorityLevels {
		if w := revertReason(flowschema.KindPL, pl.ObjectMeta, defaultedSpec(pl), mandatoryPL, suggestedPL); w != "" {
			out = append(out, w)
		}
	}
	return out
}

func revertReason(kind string, meta flowschema.ObjectMeta, spec any, mandatory, suggested map[string]any) string {
	if want, ok := mandatory[meta.Name]; ok {
		if spec != want {
			return fmt.Sprintf("%s %q is mandatory: the API server reverts its spec to the bootstrap one", kind, meta.Name)
		}
		return ""
	}
	want, ok := suggested[meta.Name]
	if !ok || spec == want {
		return ""
	}
	value, set := meta.Annotations[flowschema.AutoUpdateAnnotationKey]
	auto, err := strconv.ParseBool(value)
	switch {
	case set && err == nil && auto:
		return fmt.Sprintf("%s %q has %s: %q and differs from the bootstrap one: the API server reverts its spec", kind, meta.Name, flowschema.AutoUpdateAnnotationKey, value)
	case (!set || err != nil) && meta.Generation == 1:
		return fmt.Sprintf("%s %q has no boolean %s annotation and generation 1, and differs from the bootstrap one: the API server reverts its spec", kind, meta.Name, flowschema.AutoUpdateAnnotationKey)
	}
	return ""
}

// specsByName maps bootstrap objects' names to their defaulted specs.
func specsByName[T flowschema.FlowSchema | flowschema.PriorityLevelConfiguration](objs []T) map[string]any {
	m := map[string]any{}
	for _, o := range objs {
		switch o := any(o).(type) {
		case flowschema.FlowSchema:
			m[o.Name] = defaultedSpec(o)
		case flowschema.PriorityLevelConfiguration:
			m[o.Name] = defaultedSpec(o)
		}
	}
	return m
}

// defaultedSpec returns the spec of a FlowSchema or
// PriorityLevelConfiguration after the v1 defaults, as JSON.
func defaultedSpec(o any) any {
	switch o := o.(type) {
	case flowschema.FlowSchema:
		c := o.DeepCopy()
		c.SetDefaults()
		b, _ := json.Marshal(c.Spec)
		return string(b)
	case flowschema.PriorityLevelConfiguration:
		c := o.DeepCopy()
		c.SetDefaults()
		b, _ := json.Marshal(c.Spec)
		return string(b)
	}
	return ""
}

// usageError prints a command-line problem and returns exitUsage.
func usageError(stderr io.Writer, cmd, format string, args ...any) int {
	fmt.Fprintf(stderr, "fairslice %s: %s\nRun 'fairslice %s --help' for usage.\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}

// failure prints an error and returns exitFailure.
func failure(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "fairslice %s: %v\n", cmd, err)
	return exitFailure
}
