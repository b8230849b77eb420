package grpcapf_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

// issue returns a certificate for subject signed by parent (self-signed
// when parent is nil), and its key.
func issue(t *testing.T, subject pkix.Name, parent *tls.Certificate, ca bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        ca, BasicConstraintsValid: true, DNSNames: []string{"server"},
	}
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		signer, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func TestCertificateUserOverMutualTLS(t *testing.T) {
	ca := issue(t, pkix.Name{CommonName: "ca"}, nil, true)
	serverCert := issue(t, pkix.Name{CommonName: "server"}, &ca, false)
	clientCert := issue(t, pkix.Name{CommonName: "alice", Organization: []string{"tenants"}}, &ca, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)

	c := newController(t, 4)
	sopts, err := grpcapf.ServerOptions(c, grpcapf.Options{User: grpcapf.CertificateUser})
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(append(sopts, grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
	})))...)
	b := newBlocker()
	healthpb.RegisterHealthServer(s, b)
	lis := bufconn.Listen(1 << 20)
	go s.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///server",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{clientCert}, RootCAs: pool, ServerName: "server",
		})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); s.Stop() })

	done := make(chan error, 1)
	go func() {
		_, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
		done <- err
	}()
	recv(t, b.entered, "call over mTLS")
	// Only the group "tenants", from the certificate's organization, leads
	// to the level "work".
	if _, seats := counts(c); seats != 1 {
		t.Errorf("seats of level work held by alice's call = %d, want 1 (classified by the certificate's user and groups)", seats)
	}
	close(b.release)
	if err := recv(t, done, "call over mTLS"); err != nil {
		t.Errorf("call over mTLS: %v", err)
	}
}
