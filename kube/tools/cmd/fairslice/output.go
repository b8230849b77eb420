package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// outputFormat is the value of -o: text (the default), json or yaml. The
// json and yaml forms of a command are one document of the same shape,
// documented in its --help; fields are only ever added.
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
	outputYAML outputFormat = "yaml"
)

func (o *outputFormat) String() string {
	if o == nil || *o == "" {
		return string(outputText)
	}
	return string(*o)
}

func (o *outputFormat) Set(s string) error {
	switch outputFormat(s) {
	case outputText, outputJSON, outputYAML:
		*o = outputFormat(s)
		return nil
	}
	return fmt.Errorf("%q is not text, json or yaml", s)
}

// outputFlag registers -o and --output on fs.
func outputFlag(fs *flag.FlagSet) *outputFormat {
	o := new(outputFormat)
	*o = outputText
	fs.Var(o, "o", "output `FORMAT`: text, json or yaml")
	fs.Var(o, "output", "output `FORMAT`: text, json or yaml (same as -o)")
	return o
}

// write prints v as JSON or YAML, or calls text for the text form.
func (o outputFormat) write(w io.Writer, v any, text func(io.Writer) error) error {
	switch o {
	case outputJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case outputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return text(w)
}
