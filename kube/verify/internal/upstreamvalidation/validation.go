// Package upstreamvalidation runs Kubernetes' own validation of
// FlowSchemas and PriorityLevelConfigurations (k8s.io/kubernetes v1.37.2
// pkg/apis/flowcontrol/validation) on flowschema objects: it converts them
// to k8s.io/api flowcontrol/v1 by a JSON round trip, applies the v1
// defaults and converts them to the internal types exactly as the API
// server does (k8s.io/kubernetes pkg/apis/flowcontrol/v1), and validates
// them. "replace" directives in kube/verify/go.mod pin k8s.io/kubernetes's staging
// modules to v0.37.2.
package upstreamvalidation

import (
	"encoding/json"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/flowcontrol"
	fcv1 "k8s.io/kubernetes/pkg/apis/flowcontrol/v1"
	"k8s.io/kubernetes/pkg/apis/flowcontrol/validation"

	"github.com/fairslice/fairslice/flowschema"
)

// Error is one upstream validation error.
type Error struct {
	Type   string
	Field  string
	Detail string
}

func convertErrors(l field.ErrorList) []Error {
	out := make([]Error, 0, len(l))
	for _, e := range l {
		out = append(out, Error{Type: e.Type.String(), Field: e.Field, Detail: e.Detail})
	}
	return out
}

func roundTrip(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// ValidateFlowSchema defaults, converts and validates fs as the API server
// does on create.
func ValidateFlowSchema(fs *flowschema.FlowSchema) ([]Error, error) {
	var v1 flowcontrolv1.FlowSchema
	if err := roundTrip(fs, &v1); err != nil {
		return nil, err
	}
	fcv1.SetObjectDefaults_FlowSchema(&v1)
	var internal flowcontrol.FlowSchema
	if err := fcv1.Convert_v1_FlowSchema_To_flowcontrol_FlowSchema(&v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("upstreamvalidation: converting: %w", err)
	}
	return convertErrors(validation.ValidateFlowSchema(&internal)), nil
}

// ValidatePriorityLevelConfiguration defaults, converts and validates pl as
// the API server does on create (request version v1).
func ValidatePriorityLevelConfiguration(pl *flowschema.PriorityLevelConfiguration) ([]Error, error) {
	var v1 flowcontrolv1.PriorityLevelConfiguration
	if err := roundTrip(pl, &v1); err != nil {
		return nil, err
	}
	fcv1.SetObjectDefaults_PriorityLevelConfiguration(&v1)
	var internal flowcontrol.PriorityLevelConfiguration
	if err := fcv1.Convert_v1_PriorityLevelConfiguration_To_flowcontrol_PriorityLevelConfiguration(&v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("upstreamvalidation: converting: %w", err)
	}
	return convertErrors(validation.ValidatePriorityLevelConfiguration(&internal, flowcontrolv1.SchemeGroupVersion, validation.PriorityLevelValidationOptions{})), nil
}
