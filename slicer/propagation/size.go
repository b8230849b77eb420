package propagation

import (
	"math/bits"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fairslice/fairslice/slicer"
)

// Size is the serialized size of an object in bytes, in the API server's
// two encodings.
type Size struct {
	// Protobuf is the object as the API server stores it in etcd and
	// sends it to protobuf watchers: the "k8s\x00" magic followed by a
	// runtime.Unknown envelope (apiVersion, kind, the object's protobuf
	// bytes, empty content encoding and type).
	Protobuf int
	// JSON is the object as encoding/json writes it, with apiVersion and
	// kind (compact, HTML-escaped, map keys sorted).
	JSON int
}

// Add returns s + o.
func (s Size) Add(o Size) Size { return Size{s.Protobuf + o.Protobuf, s.JSON + o.JSON} }

// Stored is the metadata the API server sets on a stored object.
type Stored struct {
	UID             string
	ResourceVersion string
	Generation      int64
	Created         time.Time
}

// EndpointSliceSize returns the size of s as a discovery/v1 EndpointSlice
// with the stored metadata st. The model follows k8s.io/api v0.37.2's
// generated protobuf code (non-pointer strings and integers are always
// written, pointers only when set) and encoding/json with the API types'
// field tags; kube/verify/compare/slicer checks it byte for byte against the
// real marshalling. Endpoints and ports are written as arrays, never
// null, as the controller writes them (nil Addresses are null). Managed
// fields are not modelled.
func EndpointSliceSize(s slicer.Slice, st Stored) Size {
	var eps elems
	for i := range s.Endpoints {
		eps.add(endpointSize(&s.Endpoints[i]))
	}
	return endpointSliceFrom(s, st, eps)
}

// endpointSliceFrom sizes a slice whose endpoints' sizes are summed in
// eps.
func endpointSliceFrom(s slicer.Slice, st Stored, eps elems) Size {
	return sliceFrameOf(s, st).size(eps)
}

// sliceFrame is what a slice's size adds to its endpoints: metadata,
// ports and address type, sized once for slices that differ only in
// their endpoints.
type sliceFrame struct {
	pb, json int // without the endpoints
}

func sliceFrameOf(s slicer.Slice, st Stored) sliceFrame {
	var ports elems
	for _, p := range s.Ports {
		ports.add(portSize(p))
	}
	meta := objectMeta(s.Name, s.GenerateName, s.Namespace, s.Labels, s.Annotations, s.Owners, st)
	return sliceFrame{
		pb: field(meta.Protobuf) + ports.pb + str(string(s.AddressType)),
		json: 1 + member("kind", jstr("EndpointSlice")) + 1 + member("apiVersion", jstr("discovery.k8s.io/v1")) +
			1 + member("metadata", meta.JSON) + 1 + member("addressType", jstr(string(s.AddressType))) +
			1 + member("endpoints", 0) + 1 + member("ports", ports.jsonArray()) + 1,
	}
}

// size sizes the slice with the endpoints summed in eps.
func (f sliceFrame) size(eps elems) Size {
	pb := f.pb + eps.pb
	js := f.json + eps.jsonArray()
	return Size{Protobuf: envelope(pb, "discovery.k8s.io/v1", "EndpointSlice"), JSON: js}
}

// elems accumulates the sizes of the elements of a repeated field.
type elems struct {
	pb   int // tagged, length-prefixed elements
	json int // elements without separators
	n    int
}

func (e *elems) add(s Size) {
	e.pb += field(s.Protobuf)
	e.json += s.JSON
	e.n++
}

func (e *elems) remove(s Size) {
	e.pb -= field(s.Protobuf)
	e.json -= s.JSON
	e.n--
}

// jsonArray is the size of "[a,b,...]".
func (e elems) jsonArray() int {
	if e.n == 0 {
		return 2
	}
	return 2 + e.json + e.n - 1
}

// endpointSize is the size of one discovery/v1 Endpoint message (without
// its tag and length) and of its JSON object.
func endpointSize(e *slicer.Endpoint) Size {
	pb := 0
	addrs := 0
	for _, a := range e.Addresses {
		pb += str(a)
		addrs += jstr(a)
	}
	conds, cj := conditionsSize(e.Conditions)
	pb += field(conds)
	js := 1 + member("addresses", jsonList(addrs, len(e.Addresses), e.Addresses == nil)) + 1 + member("conditions", cj)
	if e.Hostname != "" {
		pb += str(e.Hostname)
		js += 1 + member("hostname", jstr(e.Hostname))
	}
	if !e.TargetRef.IsZero() {
		r := objectRefSize(e.TargetRef)
		pb += field(r.Protobuf)
		js += 1 + member("targetRef", r.JSON)
	}
	if e.NodeName != "" {
		pb += str(e.NodeName)
		js += 1 + member("nodeName", jstr(e.NodeName))
	}
	if e.Zone != "" {
		pb += str(e.Zone)
		js += 1 + member("zone", jstr(e.Zone))
	}
	if e.Hints != nil {
		h := hintsSize(e.Hints)
		pb += field(h.Protobuf)
		js += 1 + member("hints", h.JSON)
	}
	return Size{Protobuf: pb, JSON: js + 1}
}

func jsonList(elemsLen, n int, isNil bool) int {
	if isNil {
		return 4
	}
	if n == 0 {
		return 2
	}
	return 2 + elemsLen + n - 1
}

func conditionsSize(c slicer.Conditions) (pb, js int) {
	js = 1
	first := true
	for _, f := range []struct {
		name string
		v    slicer.Tristate
	}{{"ready", c.Ready}, {"serving", c.Serving}, {"terminating", c.Terminating}} {
		if f.v == slicer.Unset {
			continue
		}
		pb += 2
		if !first {
			js++
		}
		first = false
		js += member(f.name, len(f.v.String()))
	}
	return pb, js + 1
}

func hintsSize(h *slicer.Hints) Size {
	var pb, zj, nj int
	for _, z := range h.ForZones {
		pb += field(str(z))
		zj += 1 + member("name", jstr(z)) + 1
	}
	for _, n := range h.ForNodes {
		pb += field(str(n))
		nj += 1 + member("name", jstr(n)) + 1
	}
	js := 1
	if len(h.ForZones) > 0 {
		js += member("forZones", 2+zj+len(h.ForZones)-1)
	}
	if len(h.ForNodes) > 0 {
		if len(h.ForZones) > 0 {
			js++
		}
		js += member("forNodes", 2+nj+len(h.ForNodes)-1)
	}
	return Size{pb, js + 1}
}

// objectRefSize sizes a core/v1 ObjectReference.
func objectRefSize(r slicer.ObjectRef) Size {
	pb := str(r.Kind) + str(r.Namespace) + str(r.Name) + str(r.UID) + str(r.APIVersion) + str(r.ResourceVersion) + str(r.FieldPath)
	var o jsonObject
	o.optString("kind", r.Kind)
	o.optString("namespace", r.Namespace)
	o.optString("name", r.Name)
	o.optString("uid", r.UID)
	o.optString("apiVersion", r.APIVersion)
	o.optString("resourceVersion", r.ResourceVersion)
	o.optString("fieldPath", r.FieldPath)
	return Size{pb, o.size()}
}

func portSize(p slicer.Port) Size {
	// Name is always set (as the controller writes it); protocol, port
	// and app protocol when non-zero.
	pb := str(p.Name)
	var o jsonObject
	o.member("name", jstr(p.Name))
	if p.Protocol != "" {
		pb += str(p.Protocol)
		o.member("protocol", jstr(p.Protocol))
	}
	if p.Port != 0 {
		pb += 1 + varint(uint64(p.Port))
		o.member("port", len(strconv.Itoa(int(p.Port))))
	}
	if p.AppProtocol != "" {
		pb += str(p.AppProtocol)
		o.member("appProtocol", jstr(p.AppProtocol))
	}
	return Size{pb, o.size()}
}

// objectMeta sizes a metav1.ObjectMeta.
func objectMeta(name, generateName, namespace string, labels, annotations map[string]string, owners []slicer.OwnerRef, st Stored) Size {
	pb := str(name) + str(generateName) + str(namespace) + str("") + str(st.UID) + str(st.ResourceVersion) +
		1 + varint(uint64(st.Generation))
	var o jsonObject
	o.optString("name", name)
	o.optString("generateName", generateName)
	o.optString("namespace", namespace)
	o.optString("uid", st.UID)
	o.optString("resourceVersion", st.ResourceVersion)
	if st.Generation != 0 {
		o.member("generation", len(strconv.FormatInt(st.Generation, 10)))
	}
	if st.Created.IsZero() {
		pb += field(0) // JSON omits a zero time (omitzero)
	} else {
		t := st.Created
		pb += field(1 + varint(uint64(t.Unix())) + 2) // nanos are not sent
		o.member("creationTimestamp", jstr(t.UTC().Format(time.RFC3339)))
	}
	if len(labels) > 0 {
		p, j := stringMap(labels)
		pb += p
		o.member("labels", j)
	}
	if len(annotations) > 0 {
		p, j := stringMap(annotations)
		pb += p
		o.member("annotations", j)
	}
	if len(owners) > 0 {
		arr := 2 + len(owners) - 1
		for _, ow := range owners {
			s := ownerSize(ow)
			pb += field(s.Protobuf)
			arr += s.JSON
		}
		o.member("ownerReferences", arr)
	}
	return Size{pb, o.size()}
}

func ownerSize(o slicer.OwnerRef) Size {
	pb := str(o.Kind) + str(o.Name) + str(o.UID) + str(o.APIVersion)
	var j jsonObject
	j.member("apiVersion", jstr(o.APIVersion))
	j.member("kind", jstr(o.Kind))
	j.member("name", jstr(o.Name))
	j.member("uid", jstr(o.UID))
	if o.Controller {
		pb += 2
		j.member("controller", 4)
	}
	if o.BlockOwnerDeletion {
		pb += 2
		j.member("blockOwnerDeletion", 4)
	}
	return Size{pb, j.size()}
}

// stringMap sizes a map<string,string> field (each entry a tagged
// message) and its JSON object (keys sorted, which does not change the
// size).
func stringMap(m map[string]string) (pb, js int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var o jsonObject
	for _, k := range keys {
		pb += field(str(k) + str(m[k]))
		o.member(k, jstr(m[k]))
	}
	return pb, o.size()
}

// envelope is the size of the "k8s\x00" + runtime.Unknown wrapping of a
// protobuf object of size n.
func envelope(n int, apiVersion, kind string) int {
	return 4 + field(str(apiVersion)+str(kind)) + field(n) + str("") + str("")
}

// field is the size of a tagged, length-prefixed field (field number below
// 16) whose payload is n bytes.
func field(n int) int { return 1 + varint(uint64(n)) + n }

// str is the size of a tagged string field.
func str(s string) int { return field(len(s)) }

func varint(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// jsonObject accumulates the size of a JSON object's members.
type jsonObject struct {
	n     int
	total int
}

func (o *jsonObject) member(name string, valueLen int) {
	if o.n > 0 {
		o.total++
	}
	o.n++
	o.total += member(name, valueLen)
}

func (o *jsonObject) optString(name, v string) {
	if v != "" {
		o.member(name, jstr(v))
	}
}

func (o *jsonObject) size() int { return 2 + o.total }

// member is the size of `"name":value`.
func member(name string, valueLen int) int { return jstr(name) + 1 + valueLen }

// jstr is the size of s as a JSON string as encoding/json writes it:
// quotes, HTML-safe escaping of <, > and &, \uXXXX for control characters,
// U+2028, U+2029 and invalid UTF-8 (as \ufffd).
func jstr(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
