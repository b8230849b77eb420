// Package yamldocs splits a stream of Kubernetes manifests into its
// documents: YAML documents separated by "---" lines, or JSON values one
// after another. It is the one splitter behind flowschema.Decode, the
// fairslice CLI's inputs and kube/internal/kubescenario's scenarios.
package yamldocs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Doc is one document of a stream.
type Doc struct {
	// N is the document's 1-based position among the non-empty documents
	// of the stream, the number error messages use.
	N int
	// Text is the document as it appears in the stream: YAML, or one
	// JSON value.
	Text []byte
	// JSON is the document converted to JSON; nil when Err is set.
	JSON []byte
	// Err says why the document could not be read: YAML that does not
	// convert to JSON, or malformed JSON. It names the document.
	Err error
}

// Split returns the documents of data in order. Data whose first
// non-space byte is '{' or '[' is read as JSON values one after another;
// anything else, and JSON values separated by "---" lines, as YAML documents separated by lines holding
// only "---" (and trailing spaces). Documents that are empty, hold only comments or
// are null are left out. A YAML document that does not convert to JSON is
// returned with its Err set and the split goes on; malformed JSON ends the
// stream with a last document whose Err is set, since the values after it
// cannot be found.
func Split(data []byte) []Doc {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		docs := splitJSON(trimmed)
		if FirstErr(docs) == nil {
			return docs
		}
		// JSON values separated by "---" lines are YAML documents. Only
		// then: the YAML parser reads a prefix of some malformed JSON
		// without complaint.
		if len(splitYAML(data)) > 1 {
			if y := splitYAMLDocs(data); FirstErr(y) == nil {
				return y
			}
		}
		return docs
	}
	return splitYAMLDocs(data)
}

func splitYAMLDocs(data []byte) []Doc {
	var docs []Doc
	for _, text := range splitYAML(data) {
		j, err := yaml.YAMLToJSON(text)
		if err == nil {
			if t := bytes.TrimSpace(j); len(t) == 0 || bytes.Equal(t, []byte("null")) {
				continue
			}
		}
		d := Doc{N: len(docs) + 1, Text: text, JSON: j}
		if err != nil {
			d.JSON, d.Err = nil, fmt.Errorf("YAML document %d: %w", d.N, err)
		}
		docs = append(docs, d)
	}
	return docs
}

// FirstErr returns the first document error of docs, or nil.
func FirstErr(docs []Doc) error {
	for i := range docs {
		if docs[i].Err != nil {
			return docs[i].Err
		}
	}
	return nil
}

func splitJSON(data []byte) []Doc {
	var docs []Doc
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs
		}
		n := len(docs) + 1
		if err != nil {
			return append(docs, Doc{N: n, Err: fmt.Errorf("JSON document %d: %w", n, err)})
		}
		if bytes.Equal(raw, []byte("null")) {
			continue
		}
		docs = append(docs, Doc{N: n, Text: raw, JSON: raw})
	}
}

// splitYAML cuts data at separator lines: "---" followed by nothing but
// spaces, tabs or a carriage return.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), len(data)+1)
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok && len(bytes.TrimSpace(rest)) == 0 {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
		cur.WriteByte('\n')
	}
	return append(docs, bytes.Clone(cur.Bytes()))
}
