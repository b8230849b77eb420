package flowschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/fairslice/fairslice/internal/yamldocs"
)

// Decode reads FlowSchemas and PriorityLevelConfigurations from Kubernetes
// YAML or JSON: one object, several (YAML documents separated by "---", or
// concatenated JSON values), or lists (kind List, FlowSchemaList or
// PriorityLevelConfigurationList, as "kubectl get flowschemas,
// prioritylevelconfigurations -o yaml" prints). Objects keep the order in
// which they appear. apiVersion must be flowcontrol.apiserver.k8s.io/v1 or
// empty. Unknown fields are ignored; no defaults are applied (see
// Config.SetDefaults).
func Decode(data []byte) (*Config, error) {
	cfg := &Config{}
	for _, doc := range yamldocs.Split(data) {
		if doc.Err != nil {
			return nil, fmt.Errorf("flowschema: %w", doc.Err)
		}
		if err := cfg.addDocument(doc.JSON, fmt.Sprintf("document %d", doc.N)); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

type header struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

func (c *Config) addDocument(doc json.RawMessage, where string) error {
	var h header
	if err := json.Unmarshal(doc, &h); err != nil {
		return fmt.Errorf("flowschema: %s: %w", where, err)
	}
	switch h.Kind {
	case KindList, KindFSList, KindPLList:
		if h.Kind != KindList {
			if err := checkAPIVersion(h.APIVersion, where); err != nil {
				return err
			}
		}
		for i, item := range h.Items {
			if err := c.addDocument(item, fmt.Sprintf("%s, items[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case KindFS, KindPL:
	case "":
		return fmt.Errorf("flowschema: %s: missing kind", where)
	default:
		return fmt.Errorf("flowschema: %s: unsupported kind %q (want %s, %s or a list of them)", where, h.Kind, KindFS, KindPL)
	}
	if err := checkAPIVersion(h.APIVersion, where); err != nil {
		return err
	}
	var err error
	if h.Kind == KindFS {
		var fs FlowSchema
		if err = json.Unmarshal(doc, &fs); err == nil {
			c.FlowSchemas = append(c.FlowSchemas, fs)
		}
	} else {
		var pl PriorityLevelConfiguration
		if err = json.Unmarshal(doc, &pl); err == nil {
			c.PriorityLevels = append(c.PriorityLevels, pl)
		}
	}
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("flowschema: %s (%s): field %s: cannot use a JSON %s as %s", where, h.Kind, te.Field, te.Value, te.Type)
		}
		return fmt.Errorf("flowschema: %s (%s): %w", where, h.Kind, err)
	}
	return nil
}

func checkAPIVersion(v, where string) error {
	if v == "" || v == APIVersion {
		return nil
	}
	return fmt.Errorf("flowschema: %s: unsupported apiVersion %q (want %s)", where, v, APIVersion)
}

// Encode writes c as a multi-document YAML stream (priority levels first),
// which Decode reads back.
func (c *Config) Encode(w io.Writer) error {
	first := true
	write := func(v any) error {
		y, err := marshalYAML(v)
		if err != nil {
			return err
		}
		if !first {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		first = false
		_, err = w.Write(y)
		return err
	}
	for i := range c.PriorityLevels {
		pl := c.PriorityLevels[i]
		pl.APIVersion, pl.Kind = APIVersion, KindPL
		if err := write(&pl); err != nil {
			return err
		}
	}
	for i := range c.FlowSchemas {
		fs := c.FlowSchemas[i]
		fs.APIVersion, fs.Kind = APIVersion, KindFS
		if err := write(&fs); err != nil {
			return err
		}
	}
	return nil
}

// marshalYAML is yaml.Marshal for strings holding characters a YAML
// stream may not carry as they are (DEL, the C1 controls, U+FEFF,
// U+FFFE, U+FFFF; JSON already escapes the C0 controls): they are
// written as JSON escapes first, so that the YAML parser behind
// yaml.JSONToYAML accepts the document and its emitter escapes them.
func marshalYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var escaped []byte
	for i, r := range string(j) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfeff || r == 0xfffe || r == 0xffff {
			if escaped == nil {
				escaped = append(make([]byte, 0, len(j)+16), j[:i]...)
			}
			escaped = fmt.Appendf(escaped, `\u%04x`, r)
			continue
		}
		if escaped != nil {
			escaped = utf8.AppendRune(escaped, r)
		}
	}
	if escaped != nil {
		j = escaped
	}
	return yaml.JSONToYAML(j)
}
