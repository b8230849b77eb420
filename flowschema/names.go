package flowschema

import (
	"fmt"
	"regexp"
	"strings"
)

// Name checks of k8s.io/apimachinery/pkg/util/validation, with its
// messages.

const (
	dns1123LabelFmt     = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123SubdomainFmt = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	qnameCharFmt        = "[A-Za-z0-9]"
	qnameExtCharFmt     = "[-A-Za-z0-9_.]"
	qualifiedNameFmt    = "(" + qnameCharFmt + qnameExtCharFmt + "*)?" + qnameCharFmt
	labelValueFmt       = "(" + qualifiedNameFmt + ")?"
)

var (
	dns1123LabelRe     = regexp.MustCompile("^" + dns1123LabelFmt + "$")
	dns1123SubdomainRe = regexp.MustCompile("^" + dns1123SubdomainFmt + "$")
	qualifiedNameRe    = regexp.MustCompile("^" + qualifiedNameFmt + "$")
	labelValueRe       = regexp.MustCompile("^" + labelValueFmt + "$")
)

func maxLenError(n int) string { return fmt.Sprintf("must be no more than %d characters", n) }

func regexError(msg, format string, examples ...string) string {
	msg += " (e.g. "
	for i, e := range examples {
		if i > 0 {
			msg += " or "
		}
		msg += "'" + e + "', "
	}
	return msg + "regex used for validation is '" + format + "')"
}

// dnsSubdomain returns the problems of a DNS-1123 subdomain (object and
// service-account names).
func dnsSubdomain(v string) []string {
	var out []string
	if len(v) > 253 {
		out = append(out, maxLenError(253))
	}
	if !dns1123SubdomainRe.MatchString(v) {
		out = append(out, regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", dns1123SubdomainFmt, "example.com"))
	}
	return out
}

// dnsLabel returns the problems of a DNS-1123 label (namespace names).
func dnsLabel(v string) []string {
	var out []string
	if len(v) > 63 {
		out = append(out, maxLenError(63))
	}
	if !dns1123LabelRe.MatchString(v) {
		if dns1123SubdomainRe.MatchString(v) {
			out = append(out, "must not contain dots")
		} else {
			out = append(out, regexError("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return out
}

// qualifiedName returns the problems of a label or annotation key:
// an optional DNS subdomain prefix and "/", then a name of at most 63
// characters.
func qualifiedName(v string) []string {
	var out []string
	parts := strings.Split(v, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		prefix := parts[0]
		name = parts[1]
		if prefix == "" {
			out = append(out, "prefix part must be non-empty")
		} else {
			for _, msg := range dnsSubdomain(prefix) {
				out = append(out, "prefix part "+msg)
			}
		}
	default:
		return append(out, "a qualified name "+regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", qualifiedNameFmt, "MyName", "my.name", "123-abc")+
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if name == "" {
		out = append(out, "name part must be non-empty")
	} else if len(name) > 63 {
		out = append(out, "name part "+maxLenError(63))
	}
	if name != "" && !qualifiedNameRe.MatchString(name) {
		out = append(out, "name part "+regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return out
}

func labelValue(v string) []string {
	var out []string
	if len(v) > 63 {
		out = append(out, maxLenError(63))
	}
	if !labelValueRe.MatchString(v) {
		out = append(out, regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return out
}
