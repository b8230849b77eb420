package flowschema

import (
	"fmt"
	"strconv"
	"strings"
)

// ErrorType classifies a FieldError as upstream's field.ErrorType does.
type ErrorType string

// The error types Validate reports.
const (
	ErrorTypeRequired     ErrorType = "Required value"
	ErrorTypeInvalid      ErrorType = "Invalid value"
	ErrorTypeForbidden    ErrorType = "Forbidden"
	ErrorTypeNotSupported ErrorType = "Unsupported value"
	ErrorTypeDuplicate    ErrorType = "Duplicate value"
)

// FieldError is one validation problem: the object, the field path (as
// upstream spells it, e.g. spec.rules[0].subjects[1].kind), the bad value
// and what is wrong.
type FieldError struct {
	Kind     string // FlowSchema or PriorityLevelConfiguration
	Name     string // the object's name
	Type     ErrorType
	Field    string
	BadValue any
	Detail   string
	// Supported lists the allowed values of a NotSupported error.
	Supported []string
}

// Error formats e as "flowschema: <Kind> <name>: <field>: <type>: <value>: <detail>".
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("flowschema: ")
	if e.Kind != "" {
		fmt.Fprintf(&b, "%s %q: ", e.Kind, e.Name)
	}
	b.WriteString(e.Field)
	b.WriteString(": ")
	b.WriteString(string(e.Type))
	switch e.Type {
	case ErrorTypeRequired, ErrorTypeForbidden:
	default:
		b.WriteString(": ")
		b.WriteString(formatValue(e.BadValue))
	}
	if e.Type == ErrorTypeNotSupported {
		b.WriteString(": supported values: ")
		for i, s := range e.Supported {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(s))
		}
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ",") + "]"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", v)
}

// ErrorList is every problem found, in the order upstream reports them.
type ErrorList []*FieldError

// Error joins the errors, one per line.
func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Err returns l as an error, or nil if it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Fields returns the field paths of l, in order.
func (l ErrorList) Fields() []string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Field
	}
	return s
}

// path builds field paths.
type path string

func (p path) child(name string) path {
	if p == "" {
		return path(name)
	}
	return p + "." + path(name)
}

func (p path) index(i int) path { return p + path("["+strconv.Itoa(i)+"]") }

// errs accumulates FieldErrors for one object.
type errs struct {
	kind, name string
	list       ErrorList
}

func (e *errs) add(t ErrorType, p path, bad any, detail string) {
	e.list = append(e.list, &FieldError{Kind: e.kind, Name: e.name, Type: t, Field: string(p), BadValue: bad, Detail: detail})
}

func (e *errs) required(p path, detail string)         { e.add(ErrorTypeRequired, p, "", detail) }
func (e *errs) invalid(p path, bad any, detail string) { e.add(ErrorTypeInvalid, p, bad, detail) }
func (e *errs) forbidden(p path, detail string)        { e.add(ErrorTypeForbidden, p, "", detail) }
func (e *errs) duplicate(p path, bad any)              { e.add(ErrorTypeDuplicate, p, bad, "") }
func (e *errs) notSupported(p path, bad any, supported []string) {
	e.list = append(e.list, &FieldError{Kind: e.kind, Name: e.name, Type: ErrorTypeNotSupported, Field: string(p), BadValue: bad, Supported: supported})
}
