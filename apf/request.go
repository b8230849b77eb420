package apf

import (
	"fmt"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// Request is what the controller classifies: who sent a request and what
// it asks for.
type Request struct {
	User User
	Info RequestInfo
}

func (r *Request) classifierRequest() flowschema.Request {
	return flowschema.Request{
		User: r.User.Name, Groups: r.User.Groups,
		Verb: r.Info.Verb, APIGroup: r.Info.APIGroup, Resource: r.Info.Resource,
		Subresource: r.Info.Subresource, Namespace: r.Info.Namespace, Name: r.Info.Name,
		Path: r.Info.Path, ResourceRequest: r.Info.IsResourceRequest,
	}
}

// Classification is where a request was classified.
type Classification struct {
	FlowSchema, FlowSchemaUID       string
	PriorityLevel, PriorityLevelUID string
	// Distinguisher and FlowHash identify the flow; both are zero where
	// upstream computes no flow (exempt, reject-type and one-queue levels).
	Distinguisher string
	FlowHash      uint64
	Exempt        bool
}

// WorkFunc estimates the work of a classified request, given the most
// seats one request may take in its priority level (0: no level limit).
// WorkEstimator.Estimate is the usual implementation.
type WorkFunc func(cl *Classification, levelMaxSeats uint64) fairqueue.WorkEstimate

// RejectedError reports a request that will not execute.
type RejectedError struct {
	Classification Classification
	// Reason is upstream's: queue-full, concurrency-limit or time-out.
	Reason fairqueue.Reason
	// RetryAfter is the Retry-After, in seconds, to answer with.
	RetryAfter int64
	// Err is the context's error (or ErrClosed) for ReasonTimeOut.
	Err error
}

// Error names the reason and the priority level.
func (e *RejectedError) Error() string {
	s := fmt.Sprintf("apf: request rejected by priority level %q: %s", e.Classification.PriorityLevel, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *RejectedError) Unwrap() error { return e.Err }
