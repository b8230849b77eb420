// Command customserver is a minimal API server built on k8s.io/apiserver's
// genericapiserver whose API Priority and Fairness is fairslice's: the
// only change from a stock server is the line that fills
// Config.FlowControl with kube/flowcontrol.New instead of
// k8s.io/apiserver's utilflowcontrol.New (same signature).
//
//	go run ./examples/customserver --listen 127.0.0.1:8080 &
//	curl -si -H 'X-Remote-User: alice' -H 'X-Remote-Group: tenants' 127.0.0.1:8080/hello
//	curl -s 127.0.0.1:8080/debug/api_priority_and_fairness/dump_priority_levels
//
// It serves plain HTTP and trusts the X-Remote-User and X-Remote-Group
// headers (as behind an authenticating proxy), so it is a demonstration,
// not a server to expose. Without --kubeconfig its FlowSchemas and
// priority levels come from an in-memory clientset holding a "tenants"
// level and FlowSchema (group tenants); with --kubeconfig they are the
// cluster's, as for an aggregated API server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fairslice/fairslice/kube/flowcontrol"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve plain HTTP on")
	kubeconfig := flag.String("kubeconfig", "", "read FlowSchemas and priority levels from this cluster (default: built-in demo objects)")
	seats := flag.Int("server-concurrency", 600, "server concurrency limit in seats")
	flag.Parse()
	client, err := flowcontrolSource(*kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log.Printf("serving on http://%s", l.Addr())
	if err := serve(ctx, l, client, *seats); err != nil {
		log.Fatal(err)
	}
}

// flowcontrolSource is the clientset the flow controller's informers
// read: the cluster's, or an in-memory one with the demo objects.
func flowcontrolSource(kubeconfig string) (kubernetes.Interface, error) {
	if kubeconfig == "" {
		return fake.NewClientset(demoObjects()...), nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// demoObjects are a one-queue-per-user priority level "tenants" and a
// FlowSchema sending group tenants to it.
func demoObjects() []runtime.Object {
	shares, lendable := int32(30), int32(0)
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants", UID: "11111111-2222-3333-4444-555555555555"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares, LendablePercent: &lendable,
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 6, QueueLengthLimit: 50}}}},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants", UID: "66666666-7777-8888-9999-000000000000"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "tenants"}, MatchingPrecedence: 500,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "tenants"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	return []runtime.Object{pl, fs}
}

// headerUser authenticates a request by its X-Remote-User and
// X-Remote-Group headers; without them it is system:anonymous.
var headerUser = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	name := r.Header.Get("X-Remote-User")
	if name == "" {
		return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
	}
	groups := append(r.Header.Values("X-Remote-Group"), user.AllAuthenticated)
	return &authenticator.Response{User: &user.DefaultInfo{Name: name, Groups: groups}}, true, nil
})

// newServer builds the generic API server with fairslice's flow control
// and a /hello endpoint.
func newServer(addr string, client kubernetes.Interface, seats int) (*genericapiserver.GenericAPIServer, error) {
	cfg := genericapiserver.NewConfig(serializer.NewCodecFactory(runtime.NewScheme()))
	cfg.ExternalAddress = addr // no secure port to derive it from
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	cfg.LoopbackClientConfig = &rest.Config{}
	cfg.Authentication.Authenticator = headerUser
	cfg.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	inf := informers.NewSharedInformerFactory(client, 0)

	// The switch: upstream's line is
	//	cfg.FlowControl = utilflowcontrol.New(inf, client.FlowcontrolV1(), seats)
	cfg.FlowControl = flowcontrol.New(inf, client.FlowcontrolV1(), seats)

	s, err := cfg.Complete(inf).New("fairslice-customserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s.Handler.NonGoRestfulMux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	return s, nil
}

// serve runs the server (its post-start hooks start the informers and the
// flow controller) and serves it on l until ctx ends.
func serve(ctx context.Context, l net.Listener, client kubernetes.Interface, seats int) error {
	s, err := newServer(l.Addr().String(), client, seats)
	if err != nil {
		return err
	}
	// No secure port: this starts the post-start hooks (informers, the
	// flow controller's Run) and returns; they stop when ctx ends.
	if _, _, err := s.PrepareRun().NonBlockingRunWithContext(ctx, 0); err != nil {
		return err
	}
	hs := &http.Server{Handler: s.Handler}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
