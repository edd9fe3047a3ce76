package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestBrokerUsers: tegrl broker --users admits the users of the file with
// their roles: the learner publishes parameters, the actor receives them
// and its own publish on the parameter subject is refused.
func TestBrokerUsers(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("# run r1\nlearn:pw-l:learner\nact:pw-a:actor:r1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := time.Now().Add(10 * time.Second)
	url, done, _ := startListening(t, ctx, 10*time.Second, "broker", "--listen", "127.0.0.1:0", "--users", users, "--log-level", "error")
	dial := func(user, pass string) *transport.Conn {
		c, err := transport.Dial(ctx, transport.DialConfig{URL: url, User: user, Password: pass, RunID: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	lc, ac := dial("learn", "pw-l"), dial("act", "pw-a")
	l, err := transport.NewLearner(lc, transport.LearnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	act, err := transport.NewActor(ctx, ac, transport.ActorConfig{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer act.Close()
	if err := l.PublishParams(1, []byte("w")); err != nil {
		t.Fatal(err)
	}
	if err := ac.NATS().Publish(ac.Subjects().Params, []byte("forged")); err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
	defer fcancel()
	_ = ac.Flush(fctx)
	for ac.Stats().PermissionErrors == 0 || act.Stats().ParamsReceived == 0 {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("actor stats %+v", act.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := transport.Dial(ctx, transport.DialConfig{URL: url, User: "act", Password: "pw-l", RunID: "r1"}); !errors.Is(err, transport.ErrUnauthorized) {
		t.Errorf("wrong password: %v", err)
	}
	cancel()
	<-done
	// A malformed users file is refused with the line.
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("a:b:admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "broker", "--users", bad); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad users file: %v", err)
	}
}
