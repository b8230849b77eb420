package yamldocs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	type doc struct {
		N    int
		JSON string
		Err  string
	}
	for _, tc := range []struct {
		name string
		in   string
		want []doc
	}{
		{"empty", "", nil},
		{"comments only", "# a\n---\n  # b\n", nil},
		{"one YAML", "kind: A\n", []doc{{1, `{"kind":"A"}`, ""}}},
		{"leading separator and empties", "---\nkind: A\n---\n---  \nkind: B\n---\nnull\n", []doc{{1, `{"kind":"A"}`, ""}, {2, `{"kind":"B"}`, ""}}},
		{"separator with CR", "kind: A\r\n---\r\nkind: B\r\n", []doc{{1, `{"kind":"A"}`, ""}, {2, `{"kind":"B"}`, ""}}},
		{"not a separator", "a: |\n  ---x\n", []doc{{1, `{"a":"---x\n"}`, ""}}},
		{"bad YAML goes on", "kind: [\n---\nkind: B\n", []doc{{1, "", "YAML document 1: "}, {2, `{"kind":"B"}`, ""}}},
		{"concatenated JSON", `{"kind":"A"} null {"kind":"B"}`, []doc{{1, `{"kind":"A"}`, ""}, {2, `{"kind":"B"}`, ""}}},
		{"JSON documents separated by ---", "{\"kind\":\"A\"}\n---\n{\"kind\":\"B\"}\n", []doc{{1, `{"kind":"A"}`, ""}, {2, `{"kind":"B"}`, ""}}},
		{"JSON array is one document", ` [{"kind":"A"}]`, []doc{{1, `[{"kind":"A"}]`, ""}}},
		{"malformed JSON ends the stream", `{"kind":"A"} {"kind":`, []doc{{1, `{"kind":"A"}`, ""}, {2, "", "JSON document 2: "}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []doc
			for _, d := range Split([]byte(tc.in)) {
				g := doc{N: d.N, JSON: string(d.JSON)}
				if d.Err != nil {
					// Keep the prefix that names the document; the rest is the decoder's.
					g.Err = d.Err.Error()[:strings.Index(d.Err.Error(), ": ")+2]
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Split(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestSplitKeepsText(t *testing.T) {
	in := "# head\nkind: A # why\n---\nkind: B\n"
	docs := Split([]byte(in))
	if len(docs) != 2 || string(docs[0].Text) != "# head\nkind: A # why\n" || string(docs[1].Text) != "kind: B\n" {
		t.Fatalf("texts: %+v", docs)
	}
}

func TestFirstErr(t *testing.T) {
	if err := FirstErr(Split([]byte("a: 1\n---\nb: 2\n"))); err != nil {
		t.Fatalf("FirstErr = %v, want nil", err)
	}
	err := FirstErr(Split([]byte("a: 1\n---\nb: [\n---\nc: {\n")))
	if err == nil || !strings.HasPrefix(err.Error(), "YAML document 2: ") {
		t.Fatalf("FirstErr = %v, want the second document's error", err)
	}
}

// FuzzSplit: no panic; documents are numbered 1, 2, ...; every document
// without an error holds valid JSON that is not null; in a YAML stream,
// the texts are pieces of the input.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "kind: A\n---\nkind: B\n", `{"a":1}{"b":2}`, "---\n---\n", "a: [\n", "[1,2]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs := Split(data)
		trimmed := bytes.TrimSpace(data)
		isJSON := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
		for i, d := range docs {
			if d.N != i+1 {
				t.Fatalf("document %d numbered %d", i+1, d.N)
			}
			if d.Err != nil {
				if d.JSON != nil {
					t.Fatalf("document %d has both JSON and an error", d.N)
				}
				if isJSON && i != len(docs)-1 {
					t.Fatalf("JSON error in document %d is not the last", d.N)
				}
				continue
			}
			if !json.Valid(d.JSON) || string(bytes.TrimSpace(d.JSON)) == "null" {
				t.Fatalf("document %d: JSON %q", d.N, d.JSON)
			}
			if !isJSON && !bytes.Contains(bytes.ReplaceAll(append(bytes.Clone(data), '\n'), []byte("\r\n"), []byte("\n")), d.Text) {
				t.Fatalf("document %d: text %q is not in the input", d.N, d.Text)
			}
		}
	})
}
