package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"
)

// The input grammar every command shares: files or "-" for standard input;
// YAML documents separated by "---" or concatenated JSON values; kubectl's
// List and typed lists (FlowSchemaList, PodList, ...) expanded into their
// items, which take the list's kind when they have none (as the API
// server's list responses print them). Fields a command does not know
// (managedFields, status, annotations) are kubectl's noise and are ignored
// where the object type has no such field. An input without any object is
// an error.

// object is one Kubernetes object read from an input, named by its file
// and document.
type object = kubescenario.Object

// inputName is how errors name an input: "standard input" for "-".
func inputName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// readInput reads a file, or standard input for "-".
func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// readObjects reads every object of the named inputs in order. Errors name
// the input and the document.
func readObjects(names ...string) ([]object, error) {
	var objs []object
	for _, name := range names {
		data, err := readInput(name)
		if err != nil {
			return nil, err
		}
		got, err := kubescenario.Objects(inputName(name), data)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return nil, fmt.Errorf("%s: no objects (the input is empty)", inputName(name))
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// pickObjects keeps the objects of the given kinds and reports the others
// on stderr, as not used by cmd.
func pickObjects(stderr io.Writer, cmd string, objs []object, kinds ...string) []object {
	var kept []object
	for i := range objs {
		used := false
		for _, k := range kinds {
			used = used || objs[i].Kind == k
		}
		if used {
			kept = append(kept, objs[i])
			continue
		}
		fmt.Fprintf(stderr, "fairslice %s: ignoring %s: %s uses only %s\n", cmd, objs[i].String(), cmd, strings.Join(kinds, ", "))
	}
	return kept
}
