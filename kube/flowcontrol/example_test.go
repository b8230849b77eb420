package flowcontrol_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/kube/flowcontrol"
)

// New in place of upstream's utilflowcontrol.New, driven here by hand as
// the API server's filter drives it: a FlowSchema from the informers
// classifies the request, and noteFn gets the objects with their UIDs.
func ExampleNew() {
	shares := int32(10)
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants", UID: "pl-uid"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares,
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 6, QueueLengthLimit: 50}}}},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants", UID: "fs-uid"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "tenants"}, MatchingPrecedence: 500,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "tenants"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
					Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}},
		},
	}
	client := fake.NewClientset(pl, fs)
	inf := informers.NewSharedInformerFactory(client, 0)
	fc := flowcontrol.New(inf, client.FlowcontrolV1(), 600) // was: utilflowcontrol.New(...)

	stop := make(chan struct{})
	inf.Start(stop)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = fc.Run(stop) }()
	defer func() { close(stop); <-ran; inf.Shutdown() }()

	rd := utilflowcontrol.RequestDigest{
		RequestInfo: &genericrequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1",
			Namespace: "team-a", Resource: "pods", Path: "/api/v1/namespaces/team-a/pods"},
		User: &user.DefaultInfo{Name: "alice", Groups: []string{"tenants", "system:authenticated"}},
	}
	var note string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		fc.Handle(context.Background(), rd,
			func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, dist string) {
				note = fmt.Sprintf("FlowSchema %s (UID %s), level %s (UID %s), flow %q", fs.Name, fs.UID, pl.Name, pl.UID, dist)
			},
			func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
			func(bool) {},
			func() {})
		if strings.HasPrefix(note, "FlowSchema tenants ") {
			break // the informers have delivered the configuration
		}
	}
	fmt.Println(note)
	// Output:
	// FlowSchema tenants (UID fs-uid), level tenants (UID pl-uid), flow "alice"
}
