package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tegrl/tegrl/rl/transport"
)

// TestTrainSignsPolicy: tegrl train writes its signing key (mode 0600),
// the public key and a signature sidecar beside the policy that verifies
// with it; the policy's bytes are those of the same run with another key,
// and --sign-key-from-seed makes the signature reproducible too.
func TestTrainSignsPolicy(t *testing.T) {
	train := func(extra ...string) string {
		dir := t.TempDir()
		args := append([]string{"train", "--preset", "small", "--out", dir, "--steps", "400", "--batch", "200", "--segment", "50",
			"--machines", "24", "--episode", "900", "--candidates", "8", "--hidden", "16", "--eval-seeds", "", "--checkpoint-every", "0",
			"--log-level", "warn"}, extra...)
		if _, stderr, err := run(t, args...); err != nil {
			t.Fatalf("train: %v\n%s", err, stderr)
		}
		return dir
	}
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := train(), train("--sign-key-from-seed")
	for _, dir := range []string{a, b} {
		if st, err := os.Stat(filepath.Join(dir, transport.SigningKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("signing key: %v %v", st, err)
		}
		pub, err := transport.ReadPublicKeyFile(filepath.Join(dir, transport.PublicKeyFile))
		if err != nil {
			t.Fatal(err)
		}
		policy := read(filepath.Join(dir, "policy.safetensors"))
		if err := transport.VerifyPolicy(pub, policy, read(filepath.Join(dir, "policy.safetensors.sig"))); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	if !bytes.Equal(read(filepath.Join(a, "policy.safetensors")), read(filepath.Join(b, "policy.safetensors"))) {
		t.Error("the signing key changed the policy's bytes")
	}
	if bytes.Equal(read(filepath.Join(a, transport.PublicKeyFile)), read(filepath.Join(b, transport.PublicKeyFile))) {
		t.Error("a fresh key equals the seed's")
	}
	want := transport.SignPolicy(transport.SigningKeyFromSeed(1), read(filepath.Join(b, "policy.safetensors")))
	if got := read(filepath.Join(b, "policy.safetensors.sig")); !bytes.Equal(got, want) {
		t.Errorf("--sign-key-from-seed sidecar %q, want %q", got, want)
	}
}
