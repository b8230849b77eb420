package slicescenario

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// ReadInput reads the objects of a reconcile scenario (kubescenario.Read of a
// Service, Pods, Nodes and the existing EndpointSlices) into an Input,
// defaulted as the API server would store the objects (see Default).
// Errors name each object's file and document.
func ReadInput(objs []kubescenario.Object) (Input, error) {
	sc, err := kubescenario.Read(objs, kubescenario.KindService, kubescenario.KindPod, kubescenario.KindNode, kubescenario.KindEndpointSlice)
	if err != nil {
		return Input{}, err
	}
	in := Input{Service: sc.Service, Pods: sc.Pods, Nodes: sc.Nodes, Existing: sc.Slices}
	Default(&in)
	return in, nil
}

// ParseScenario is ReadInput of the objects of data, a scenario file
// without a name (errors say "document N").
func ParseScenario(data []byte) (Input, error) {
	objs, err := kubescenario.Objects("", data)
	if err != nil {
		return Input{}, fmt.Errorf("scenario: %w", err)
	}
	return ReadInput(objs)
}

// Default applies the API server's defaults that matter here, in place:
// Service port protocol TCP and target port = port; container port
// protocol TCP; pod status podIP and podIPs kept in sync; EndpointSlice
// port name "" and protocol TCP; pods and slices without a namespace get
// the Service's (objects from an informer always have one). It clears
// apiVersion and kind.
func Default(in *Input) {
	tcp := corev1.ProtocolTCP
	if in.Service != nil {
		for _, p := range in.Pods {
			if p.Namespace == "" {
				p.Namespace = in.Service.Namespace
			}
		}
		for _, s := range in.Existing {
			if s.Namespace == "" {
				s.Namespace = in.Service.Namespace
			}
		}
	}
	if s := in.Service; s != nil {
		s.TypeMeta = metav1.TypeMeta{}
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if p.Protocol == "" {
				p.Protocol = tcp
			}
			if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
				p.TargetPort = intstr.FromInt32(p.Port)
			}
		}
	}
	for _, p := range in.Pods {
		p.TypeMeta = metav1.TypeMeta{}
		for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].Protocol == "" {
						cs[i].Ports[j].Protocol = tcp
					}
				}
			}
		}
		st := &p.Status
		switch {
		case st.PodIP != "" && len(st.PodIPs) == 0:
			st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
		case st.PodIP == "" && len(st.PodIPs) > 0:
			st.PodIP = st.PodIPs[0].IP
		}
	}
	for _, n := range in.Nodes {
		n.TypeMeta = metav1.TypeMeta{}
	}
	for _, s := range in.Existing {
		s.TypeMeta = metav1.TypeMeta{}
		for i := range s.Ports {
			if s.Ports[i].Name == nil {
				s.Ports[i].Name = new(string)
			}
			if s.Ports[i].Protocol == nil {
				s.Ports[i].Protocol = &tcp
			}
		}
	}
}

// ReplayArgs returns the arguments of the fairslice command that replays
// in from a scenario file written by WriteScenario: "reconcile --all-pods
// --max-endpoints-per-slice N [--upstream] FILE". --all-pods because the
// Pods of the file are the ones the reconciler is given, not ones to
// select (the Service may have no selector, as in the differential test).
func ReplayArgs(in *Input, file string, upstream bool) []string {
	args := []string{"reconcile", "--all-pods", "--max-endpoints-per-slice", strconv.Itoa(in.Max())}
	if upstream {
		args = append(args, "--upstream")
	}
	return append(args, file)
}

// WriteScenario writes in as a scenario file, with a comment giving the
// command that replays it.
func WriteScenario(w io.Writer, in Input, comment string) error {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
		fmt.Fprintf(&b, "# %s\n", line)
	}
	put := func(kind, apiVersion string, obj any) error {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "---\napiVersion: %s\nkind: %s\n%s", apiVersion, kind, data)
		return nil
	}
	if err := put("Service", "v1", in.Service); err != nil {
		return err
	}
	for _, p := range in.Pods {
		if err := put("Pod", "v1", p); err != nil {
			return err
		}
	}
	for _, n := range in.Nodes {
		if err := put("Node", "v1", n); err != nil {
			return err
		}
	}
	for _, s := range in.Existing {
		if err := put("EndpointSlice", "discovery.k8s.io/v1", s); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
