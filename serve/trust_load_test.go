package serve

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
