package serve

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tegrl/tegrl/rl/transport"
)

func TestCheckTrust(t *testing.T) {
	key := transport.SigningKeyFromSeed(1)
	pub := key.Public().(ed25519.PublicKey)
	other := transport.SigningKeyFromSeed(2)
	dir := t.TempDir()
	payload := []byte("policy bytes")
	path := filepath.Join(dir, "p.safetensors")
	write := func(name string, b []byte) {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(path, payload)
	file := candidate{name: path, source: "file", payload: payload}
	reason := func(err error) string {
		var rf *refusal
		if errors.As(err, &rf) {
			return rf.reason
		}
		return ""
	}
	// No trusted key: everything passes, signed or not.
	if err := checkTrust(nil, file, nil, 0); err != nil {
		t.Fatal(err)
	}
	// Unsigned: refused.
	if err := checkTrust(pub, file, nil, 0); !errors.Is(err, transport.ErrUnsigned) || reason(err) != reasonSignature {
		t.Errorf("unsigned file: %v", err)
	}
	write(path+".sig", transport.SignPolicy(key, payload))
	for _, src := range []string{"file", "dir"} {
		c := file
		c.source = src
		if err := checkTrust(pub, c, nil, 0); err != nil {
			t.Errorf("signed %s: %v", src, err)
		}
	}
	// Tampered after signing.
	tampered := file
	tampered.payload = []byte("policy bytez")
	if err := checkTrust(pub, tampered, nil, 0); !errors.Is(err, transport.ErrBadSignature) || reason(err) != reasonSignature {
		t.Errorf("tampered file: %v", err)
	}
	// Signed by another key.
	write(path+".sig", transport.SignPolicy(other, payload))
	if err := checkTrust(pub, file, nil, 0); !errors.Is(err, transport.ErrWrongKey) {
		t.Errorf("other key: %v", err)
	}
	// Sources without a file take the sidecar given, or are unsigned.
	nats := candidate{name: "v7", source: "nats", payload: payload}
	if err := checkTrust(pub, nats, transport.SignPolicy(key, payload), 0); err != nil {
		t.Errorf("nats with its signature: %v", err)
	}
	if err := checkTrust(pub, nats, nil, 0); !errors.Is(err, transport.ErrUnsigned) {
		t.Errorf("nats without: %v", err)
	}
	// Over the size limit: left to validation.
	if err := checkTrust(pub, nats, nil, 4); err != nil {
		t.Errorf("oversized: %v", err)
	}
	// A huge file named like a sidecar is refused, not read whole.
	write(path+".sig", make([]byte, 1<<20))
	if err := checkTrust(pub, file, nil, 0); !errors.Is(err, transport.ErrBadSignature) {
		t.Errorf("huge sidecar: %v", err)
	}
}
