// Package k8sname holds the Kubernetes name and label rules of
// k8s.io/apimachinery/pkg/util/validation (v0.37.2) once, for every
// package that validates objects (flowschema, slicer): boolean checks for
// hot paths, and the same checks returning upstream's messages for
// validation errors. No regular expressions: the rules are short scans.
package k8sname

import (
	"fmt"
	"strings"
)

// Length limits of the rules.
const (
	DNS1123LabelMaxLength     = 63
	DNS1123SubdomainMaxLength = 253
	QualifiedNameMaxLength    = 63
	LabelValueMaxLength       = 63
)

// Upstream's regular expressions, quoted in its messages.
const (
	dns1123LabelFmt     = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123SubdomainFmt = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	qnameCharFmt        = "[A-Za-z0-9]"
	qnameExtCharFmt     = "[-A-Za-z0-9_.]"
	qualifiedNameFmt    = "(" + qnameCharFmt + qnameExtCharFmt + "*)?" + qnameCharFmt
	labelValueFmt       = "(" + qualifiedNameFmt + ")?"
)

// labelChars reports whether s matches dns1123LabelFmt: non-empty,
// [a-z0-9-], starting and ending alphanumeric (no length limit).
func labelChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// subdomainChars reports whether s matches dns1123SubdomainFmt:
// dot-separated labelChars (no length limit).
func subdomainChars(s string) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !labelChars(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// nameChars reports whether s matches qualifiedNameFmt: non-empty,
// [A-Za-z0-9_.-], starting and ending alphanumeric (no length limit).
func nameChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(s)-1 || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

// IsDNS1123Label reports whether s is a DNS-1123 label (namespace names,
// port names, hostnames).
func IsDNS1123Label(s string) bool { return len(s) <= DNS1123LabelMaxLength && labelChars(s) }

// IsDNS1123Subdomain reports whether s is a DNS-1123 subdomain (object
// and node names).
func IsDNS1123Subdomain(s string) bool {
	return len(s) <= DNS1123SubdomainMaxLength && subdomainChars(s)
}

// IsGenerateName reports whether p is a valid metadata.generateName: a
// DNS-1123 subdomain once the API server appends its random suffix, that
// is with a trailing '-' read as a letter.
func IsGenerateName(p string) bool { return IsDNS1123Subdomain(MaskTrailingDash(p)) }

// MaskTrailingDash replaces a trailing '-' of s by 'a', as the API server
// does before checking a generateName.
func MaskTrailingDash(s string) string {
	if len(s) > 1 && strings.HasSuffix(s, "-") {
		return s[:len(s)-2] + "a"
	}
	return s
}

// IsLabelValue reports whether s is a valid label value: empty, or at
// most 63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric.
func IsLabelValue(s string) bool {
	return s == "" || len(s) <= LabelValueMaxLength && nameChars(s)
}

// IsQualifiedName reports whether s is a qualified name (a label key, an
// app protocol): an optional DNS-1123 subdomain prefix and '/', then a
// name of at most 63 characters of [A-Za-z0-9_.-] starting and ending
// alphanumeric.
func IsQualifiedName(s string) bool {
	name := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		prefix := s[:i]
		name = s[i+1:]
		if prefix == "" || strings.IndexByte(name, '/') >= 0 || !IsDNS1123Subdomain(prefix) {
			return false
		}
	}
	return len(name) <= QualifiedNameMaxLength && nameChars(name)
}

// maxLenError and maxBytesError are upstream's two wordings of a length
// limit: k8s.io/apimachinery/pkg/util/validation's DNS-1123 checks say
// characters, the label key and value checks (pkg/api/validate/content)
// say bytes.
func maxLenError(n int) string { return fmt.Sprintf("must be no more than %d characters", n) }

func maxBytesError(n int) string { return fmt.Sprintf("must be no more than %d bytes", n) }

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

// DNS1123Subdomain returns the problems of s as a DNS-1123 subdomain,
// with upstream's messages; none if it is one.
func DNS1123Subdomain(s string) []string { return dns1123Subdomain(s, maxLenError) }

func dns1123Subdomain(s string, tooLong func(int) string) []string {
	var out []string
	if len(s) > DNS1123SubdomainMaxLength {
		out = append(out, tooLong(DNS1123SubdomainMaxLength))
	}
	if !subdomainChars(s) {
		out = append(out, regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", dns1123SubdomainFmt, "example.com"))
	}
	return out
}

// DNS1123Label returns the problems of s as a DNS-1123 label, with
// upstream's messages.
func DNS1123Label(s string) []string {
	var out []string
	if len(s) > DNS1123LabelMaxLength {
		out = append(out, maxLenError(DNS1123LabelMaxLength))
	}
	if !labelChars(s) {
		if subdomainChars(s) {
			out = append(out, "must not contain dots")
		} else {
			out = append(out, regexError("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return out
}

// QualifiedName returns the problems of s as a qualified name, with
// upstream's messages.
func QualifiedName(s string) []string {
	var out []string
	parts := strings.Split(s, "/")
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
			for _, msg := range dns1123Subdomain(prefix, maxBytesError) {
				out = append(out, "prefix part "+msg)
			}
		}
	default:
		return append(out, "a valid label key "+regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", qualifiedNameFmt, "MyName", "my.name", "123-abc")+
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if name == "" {
		out = append(out, "name part must be non-empty")
	} else if len(name) > QualifiedNameMaxLength {
		out = append(out, "name part "+maxBytesError(QualifiedNameMaxLength))
	}
	if !nameChars(name) {
		out = append(out, "name part "+regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return out
}

// LabelValue returns the problems of s as a label value, with upstream's
// messages.
func LabelValue(s string) []string {
	var out []string
	if len(s) > LabelValueMaxLength {
		out = append(out, maxBytesError(LabelValueMaxLength))
	}
	if s != "" && !nameChars(s) {
		out = append(out, regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return out
}
