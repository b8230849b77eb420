// Package realapiserver runs a real kube-apiserver, backed by an embedded
// etcd, inside a Go test process.
//
// It exists so that fairslice's drop-ins (the EndpointSlice controller, the
// flow controller) and the CLI's live-cluster modes are tested against the
// server users run, not against a fake clientset. Everything runs in-process:
// no binaries are downloaded or executed.
//
// The server is k8s.io/kubernetes v1.37.2's kube-apiserver, assembled the way
// its own command does it (ServerRunOptions, Complete, NewConfig, the server
// chain), with three test-friendly choices: AlwaysAllow authorization, no
// ServiceAccount admission plugin (no controller-manager creates service
// accounts here) and no endpoint reconciler. The caller may replace the
// server's API Priority and Fairness controller (Options.FlowControl), which
// kube-apiserver's own test server cannot do.
//
// Costs on a 2-core machine: the first build of a test package importing this
// one takes several minutes (it links all of kube-apiserver); a server is
// ready 2-4 s after Start is called and holds about 300 MB. Keep the tests
// that use it in one package (kube/verify/e2e) so the binary is built once.
package realapiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
	basecompatibility "k8s.io/component-base/compatibility"
	logsapi "k8s.io/component-base/logs/api/v1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// FlowControlFunc builds a flow controller for the server, given the same
// arguments kube-apiserver gives k8s.io/apiserver's utilflowcontrol.New: the
// server's shared informer factory, a loopback FlowcontrolV1 client and the
// server concurrency limit (--max-requests-inflight plus
// --max-mutating-requests-inflight).
type FlowControlFunc func(informerFactory kubeinformers.SharedInformerFactory, client flowcontrolclient.FlowcontrolV1Interface, serverConcurrencyLimit int) utilflowcontrol.Interface

// Options configures Start. The zero value starts a default kube-apiserver
// with upstream's flow controller.
type Options struct {
	// FlowControl, when non-nil, builds the flow controller that replaces
	// upstream's in the handler chain of all three servers of the chain
	// (kube APIs, apiextensions, aggregator). The server calls its Run from a
	// post-start hook and its Install on the non-REST mux, as it does for
	// upstream's.
	FlowControl FlowControlFunc
	// WrapAPIHandler, when non-nil, wraps the innermost handler of each
	// server's handler chain: the wrapper runs inside panic recovery, the
	// timeout filter, authentication and flow control, where the API
	// handler would. A test-only hook, for behaviour no real request
	// path has on demand (a handler that panics or is slow).
	WrapAPIHandler func(http.Handler) http.Handler
	// Flags are extra kube-apiserver command-line flags, for example
	// "--max-requests-inflight=10" or "--audit-log-path=/tmp/x/audit.log".
	Flags []string
}

// Server is a running kube-apiserver.
type Server struct {
	// Config is the loopback administrator identity (group system:masters,
	// so APF treats it as exempt). Copy it with rest.CopyConfig before
	// changing it, for example to impersonate another user.
	Config *rest.Config
	// Client is a clientset built from Config.
	Client kubernetes.Interface
	// KubeconfigPath is a kubeconfig file naming Config's server and
	// credentials, for code that loads a kubeconfig (the CLI).
	KubeconfigPath string
	// ServerConcurrencyLimit is the limit the flow controller was given.
	ServerConcurrencyLimit int
}

// Start runs etcd and kube-apiserver in-process, waits until the server is
// healthy and the default namespace exists, and stops both with t.Cleanup.
// It fails the test on any error.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := start(t, opts)
	if err != nil {
		t.Fatalf("realapiserver: %v", err)
	}
	return s
}

func start(t testing.TB, opts Options) (*Server, error) {
	// Several servers in one process apply the same logging options; the
	// second application must not be an error.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	etcd := testserver.RunEtcd(t, nil)
	storage := storagebackend.NewDefaultConfig(filepath.Join(uuid.NewString(), "registry"), nil)
	storage.Transport.ServerList = etcd.Endpoints()

	dir := t.TempDir()
	run, err := runOptions(dir, storage, opts.Flags)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	chain, limit, err := serverChain(ctx, run, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	stopped, runErr := serve(t, ctx, cancel, chain)

	cfg := rest.CopyConfig(chain.GenericAPIServer.LoopbackClientConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := waitReady(client, stopped, runErr); err != nil {
		return nil, err
	}
	kubeconfig, err := writeKubeconfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	return &Server{Config: cfg, Client: client, KubeconfigPath: kubeconfig, ServerConcurrencyLimit: limit}, nil
}

// serverChain completes and validates run, builds kube-apiserver's
// configuration with opts' flow controller and handler wrapper, and
// creates the server chain; it also returns the total in-flight limit.
func serverChain(ctx context.Context, run *options.ServerRunOptions, opts Options) (*aggregatorapiserver.APIAggregator, int, error) {
	completed, err := run.Complete(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("completing options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, 0, fmt.Errorf("validating options: %w", errors.Join(errs...))
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		return nil, 0, fmt.Errorf("building config: %w", err)
	}
	generic := config.KubeAPIs.ControlPlane.Generic
	limit := generic.MaxRequestsInFlight + generic.MaxMutatingRequestsInFlight
	if err := customize(config, opts, limit); err != nil {
		return nil, 0, err
	}
	done, err := config.Complete()
	if err != nil {
		return nil, 0, fmt.Errorf("completing config: %w", err)
	}
	chain, err := app.CreateServerChain(done)
	if err != nil {
		return nil, 0, fmt.Errorf("creating server chain: %w", err)
	}
	return chain, limit, nil
}

// customize puts opts' flow controller and API handler wrapper into
// every server of the chain's configuration.
func customize(config *app.Config, opts Options, limit int) error {
	generic := config.KubeAPIs.ControlPlane.Generic
	if opts.FlowControl != nil {
		loopback, err := kubernetes.NewForConfig(generic.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("loopback client: %w", err)
		}
		fc := opts.FlowControl(config.KubeAPIs.ControlPlane.VersionedInformers, loopback.FlowcontrolV1(), limit)
		// NewConfig copies the generic config by value into each server of
		// the chain; every copy must carry the replacement, and the
		// aggregator's is the one in front of every request.
		generic.FlowControl = fc
		config.ApiExtensions.GenericConfig.FlowControl = fc
		config.Aggregator.GenericConfig.FlowControl = fc
	}
	if wrap := opts.WrapAPIHandler; wrap != nil {
		for _, g := range []*genericapiserver.Config{generic, &config.ApiExtensions.GenericConfig.Config, &config.Aggregator.GenericConfig.Config} {
			build := g.BuildHandlerChainFunc
			g.BuildHandlerChainFunc = func(api http.Handler, c *genericapiserver.Config) http.Handler { return build(wrap(api), c) }
		}
	}
	return nil
}

// serve runs chain until the test ends (then cancel stops it, within
// 30 s); stopped closes when it has stopped, with its error in *runErr.
func serve(t testing.TB, ctx context.Context, cancel context.CancelFunc, chain *aggregatorapiserver.APIAggregator) (stopped chan struct{}, runErr *error) {
	stopped = make(chan struct{})
	runErr = new(error)
	go func() {
		defer close(stopped)
		prepared, err := chain.PrepareRun()
		if err == nil {
			err = prepared.Run(ctx)
		}
		*runErr = err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
			if *runErr != nil && !errors.Is(*runErr, context.Canceled) {
				t.Logf("realapiserver: server stopped with %v", *runErr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("realapiserver: server did not stop within 30s")
		}
	})
	return stopped, runErr
}

// runOptions prepares kube-apiserver's options as its command would after
// parsing flags, with a fresh listener, certificates in dir and a
// service-account signing key generated for this server.
func runOptions(dir string, storage *storagebackend.Config, flags []string) (*options.ServerRunOptions, error) {
	// A registry per server: several servers may run in one test process.
	registry := basecompatibility.NewComponentGlobalsRegistry()
	version := compatibility.DefaultKubeEffectiveVersionForTest()
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, version, gate); err != nil {
		return nil, fmt.Errorf("registering component globals: %w", err)
	}

	s := options.NewServerRunOptions()
	s.GenericServerRunOptions.ComponentGlobalsRegistry = registry
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range s.Flags().FlagSets {
		fs.AddFlagSet(set)
	}

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	s.SecureServing.Listener = listener
	s.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	s.SecureServing.ExternalAddress = listener.Addr().(*net.TCPAddr).IP
	s.SecureServing.ServerCert.CertDirectory = dir
	s.ServiceClusterIPRanges = "10.0.0.0/16"
	s.Etcd.StorageConfig = *storage

	keyFile, err := writeSigningKey(dir)
	if err != nil {
		return nil, err
	}
	s.ServiceAccountSigningKeyFile = keyFile
	s.Authentication.ServiceAccounts.Issuers = []string{"https://realapiserver.fairslice.test"}
	s.Authentication.ServiceAccounts.KeyFiles = []string{keyFile}

	defaults := []string{
		"--disable-admission-plugins=ServiceAccount",
		"--authorization-mode=AlwaysAllow",
		"--endpoint-reconciler-type=none",
	}
	if err := fs.Parse(append(defaults, flags...)); err != nil {
		return nil, fmt.Errorf("flags %q: %w", flags, err)
	}
	if err := registry.Set(); err != nil {
		return nil, fmt.Errorf("applying component globals: %w", err)
	}
	return s, nil
}

func writeSigningKey(dir string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("service-account key: %w", err)
	}
	pemBytes, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", fmt.Errorf("service-account key: %w", err)
	}
	path := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		return "", fmt.Errorf("service-account key: %w", err)
	}
	return path, nil
}

// waitReady polls /healthz and then the default namespace, which the server
// creates shortly after it starts serving.
func waitReady(client kubernetes.Interface, stopped <-chan struct{}, runErr *error) error {
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-stopped:
			return fmt.Errorf("server stopped while starting: %v", *runErr)
		default:
		}
		if last = ready(client); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("server not ready after 90s: %v", last)
}

func ready(client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var status int
	res := client.CoreV1().RESTClient().Get().AbsPath("/healthz").Do(ctx)
	if res.StatusCode(&status); status != 200 {
		return fmt.Errorf("/healthz answered %d: %v", status, res.Error())
	}
	_, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	return err
}

func writeKubeconfig(dir string, cfg *rest.Config) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["realapiserver"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["realapiserver"] = &clientcmdapi.Context{Cluster: "realapiserver", AuthInfo: "admin", Namespace: "default"}
	kc.CurrentContext = "realapiserver"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return path, nil
}
