package serve

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tegrl/tegrl/rl/transport"
)

// TestLoadVerifiesSignature: with a trusted key, a policy file loads only
// with its signature sidecar; unsigned, tampered and foreign-signed ones
// are refused with reason signature and the arm keeps its policy.
func TestLoadVerifiesSignature(t *testing.T) {
	key := transport.SigningKeyFromSeed(1)
	s := newTestService(t, Config{TrustKey: key.Public().(ed25519.PublicKey)})
	dir := t.TempDir()
	payload := policyPayload(t, 3, nil)
	path := filepath.Join(dir, "p.safetensors")
	if err := os.WriteFile(path, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	before := s.router.arms[0].cur.Load()
	if _, err := s.Load("", path, "dir", payload, ""); !errors.Is(err, transport.ErrUnsigned) {
		t.Fatalf("unsigned: %v", err)
	}
	if err := os.WriteFile(path+".sig", transport.SignPolicy(transport.SigningKeyFromSeed(2), payload), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("", path, "dir", payload, ""); !errors.Is(err, transport.ErrWrongKey) {
		t.Fatalf("signed by another key: %v", err)
	}
	if err := os.WriteFile(path+".sig", transport.SignPolicy(key, payload), 0o644); err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte(nil), payload...)
	tampered[len(tampered)-1] ^= 1
	if _, err := s.Load("", path, "dir", tampered, ""); !errors.Is(err, transport.ErrBadSignature) {
		t.Fatalf("tampered: %v", err)
	}
	if got := s.router.arms[0].cur.Load(); got != before {
		t.Fatalf("a refused policy replaced the arm's: %v", got.Version)
	}
	refused := 0
	for _, e := range s.Policies().Events {
		if e.Reason == reasonSignature {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d refusals with reason signature, want 3", refused)
	}
	if _, err := s.Load("", path, "dir", payload, ""); err != nil {
		t.Fatalf("signed: %v", err)
	}
}

// TestUploadVerifiesSignature: with a trusted key, POST /v1/policies
// refuses, and counts, an unsigned policy (422, reason signature) and
// takes one whose X-Tegrl-Signature header is its sidecar line.
func TestUploadVerifiesSignature(t *testing.T) {
	key := transport.SigningKeyFromSeed(1)
	s := newTestService(t, Config{TrustKey: key.Public().(ed25519.PublicKey), AdminToken: adminToken})
	h := s.Handler()
	payload := policyPayload(t, 3, nil)
	if code, b := call(t, h, "POST", "/v1/policies", payload, bearer(adminToken)...); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"reason":"signature"`) {
		t.Fatalf("unsigned upload: %d %s", code, b)
	}
	if n := refusedCount(s, "admin", reasonSignature); n != 1 {
		t.Fatalf("%v signature refusals counted, want 1", n)
	}
	sig := strings.TrimSpace(string(transport.SignPolicy(key, payload)))
	if code, b := call(t, h, "POST", "/v1/policies", payload, append(bearer(adminToken), "X-Tegrl-Signature", sig)...); code != http.StatusOK {
		t.Fatalf("signed upload: %d %s", code, b)
	}
}

// TestHotLoadNATSSigned: serve logs in to the broker as a learner user;
// with a trusted key an unsigned object is refused and counted, and one
// whose NAME.sig object was put first loads.
func TestHotLoadNATSSigned(t *testing.T) {
	srv, err := transport.StartServer(transport.ServerConfig{Users: []transport.User{{Name: "serve", Password: "pw", Role: transport.RoleLearner}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, transport.DialConfig{URL: srv.ClientURL(), User: "serve", Password: "pw", RunID: "trainer"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	obs, err := conn.JetStream().CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "policies"})
	if err != nil {
		t.Fatal(err)
	}
	key := transport.SigningKeyFromSeed(1)
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "hot", Weight: 1}}, TrustKey: key.Public().(ed25519.PublicKey),
		NATS: NATSConfig{URL: srv.ClientURL(), User: "serve", Password: "pw", Bucket: "policies"}})
	serveBackground(t, s)
	if _, err := obs.PutBytes(ctx, "v1", policyPayload(t, 1, nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unsigned policy to be refused", 10*time.Second, func() bool { return refusedCount(s, "nats", reasonSignature) == 1 })
	p2 := policyPayload(t, 2, nil)
	if _, err := obs.PutBytes(ctx, "v2"+transport.PolicySigSuffix, transport.SignPolicy(key, p2)); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, "v2", p2); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(p2)
	waitFor(t, "the signed policy to load", 10*time.Second, func() bool { return armVersion(s) == "v2@"+hex.EncodeToString(sum[:])[:12] })
	if n := refusedCount(s, "nats", reasonSignature); n != 1 {
		t.Errorf("%v signature refusals, want 1 (the .sig object is not a policy)", n)
	}
}
