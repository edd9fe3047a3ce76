package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a throw-away certificate authority for the handshake test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate for the server (127.0.0.1) or a client.
func (ca testCA) issue(t *testing.T, name string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestTLSClientCertificates runs real TLS handshakes against Serve with
// LoadTLS's configuration: a client certificate signed by the client CA
// gets the write role without a bearer token (kube-scheduler's extender
// client sends none), while a client with no certificate, or one from
// another CA, is refused at the handshake.
func TestTLSClientCertificates(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serverCA, clientCA, otherCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	sc, sk := serverCA.issue(t, "tegrl", true)
	cfgTLS, err := LoadTLS(write("server.crt", sc), write("server.key", sk), write("client-ca.crt", clientCA.pem))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTLS(filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"), write("bad-ca.crt", []byte("not pem"))); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("bad client CA: err = %v", err)
	}
	s := newTestService(t, Config{TLS: cfgTLS, WriteToken: "write-secret", ReadToken: "read-secret"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.pem)
	client := func(ca *testCA) *http.Client {
		tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if ca != nil {
			c, k := ca.issue(t, "kube-scheduler", false)
			pair, err := tls.X509KeyPair(c, k)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	url := "https://" + ln.Addr().String() + "/v1/state"
	body := `{"time_s": 5}`
	resp, err := client(&clientCA).Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("client with a certificate of the client CA: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("state with a client certificate: status %d, want 200", resp.StatusCode)
	}
	for name, ca := range map[string]*testCA{"no certificate": nil, "another CA": &otherCA} {
		resp, err := client(ca).Post(url, "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: status %d, want a refused handshake", name, resp.StatusCode)
		}
	}
}
