package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fairslice/fairslice/flowschema"
)

// clusterFlags select a live cluster to read from: --kubeconfig FILE, or
// --cluster for kubectl's rules (KUBECONFIG, ~/.kube/config, then the
// in-cluster service account). The reads are GETs of lists; nothing is
// written.
type clusterFlags struct {
	kubeconfig string
	context    string
	cluster    bool
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "read from the cluster of kubeconfig `FILE` instead of files")
	fs.StringVar(&c.context, "context", "", "the kubeconfig `CONTEXT` to use (default: the current one)")
	fs.BoolVar(&c.cluster, "cluster", false, "read from the cluster kubectl would use ($KUBECONFIG, ~/.kube/config, or in-cluster)")
}

func (c *clusterFlags) enabled() bool { return c.kubeconfig != "" || c.cluster }

// reader returns a client for the selected cluster.
func (c *clusterFlags) reader() (*clusterReader, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.kubeconfig != "" {
		rules.ExplicitPath = c.kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return newClusterReader(cfg)
}

// clusterReader GETs lists from an API server as JSON.
type clusterReader struct {
	base   *url.URL
	client *http.Client
}

func newClusterReader(cfg *rest.Config) (*clusterReader, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	client.Timeout = time.Minute
	return &clusterReader{base: base, client: client}, nil
}

// list GETs path (with query) and returns its objects; the items of the
// returned list take its kind.
func (r *clusterReader) list(path string, query url.Values) ([]object, error) {
	u := r.base.JoinPath(path)
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", u.Path, resp.Status, body)
	}
	return kubescenario.Objects("cluster "+path, body)
}

// apfConfig reads the cluster's FlowSchemas and priority levels.
func (c *clusterFlags) apfConfig() (*flowschema.Config, error) {
	r, err := c.reader()
	if err != nil {
		return nil, err
	}
	var objs []object
	for _, res := range []string{"flowschemas", "prioritylevelconfigurations"} {
		got, err := r.list("/apis/flowcontrol.apiserver.k8s.io/v1/"+res, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return configOf(io.Discard, "", objs)
}

// serviceObjects reads a Service, the Pods of its namespace, the Nodes and
// the Service's EndpointSlices (label kubernetes.io/service-name).
func (c *clusterFlags) serviceObjects(namespace, service string) ([]object, error) {
	if namespace == "" || service == "" {
		return nil, usageErr("--kubeconfig or --cluster needs --namespace and --service")
	}
	r, err := c.reader()
	if err != nil {
		return nil, err
	}
	svc, err := r.list("/api/v1/namespaces/"+url.PathEscape(namespace)+"/services", url.Values{"fieldSelector": {"metadata.name=" + service}})
	if err != nil {
		return nil, err
	}
	if len(svc) == 0 {
		return nil, fmt.Errorf("service %s/%s not found", namespace, service)
	}
	objs := svc
	for _, l := range []struct {
		path  string
		query url.Values
	}{
		{"/api/v1/nodes", nil},
		{"/api/v1/namespaces/" + url.PathEscape(namespace) + "/pods", nil},
		{"/apis/discovery.k8s.io/v1/namespaces/" + url.PathEscape(namespace) + "/endpointslices",
			url.Values{"labelSelector": {"kubernetes.io/service-name=" + service}}},
	} {
		got, err := r.list(l.path, l.query)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}
