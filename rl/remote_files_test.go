package rl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRemoteActorReadFiles(t *testing.T) {
	t.Setenv("TEGRL_NATS_CREDENTIALS", "")
	t.Setenv("TEGRL_TRUST_KEY", "")
	creds := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(creds, []byte("actor1:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg RemoteActorConfig
	if err := cfg.ReadFiles(creds, ""); err != nil || cfg.User != "actor1" || cfg.Password != "s3cret" || cfg.TrustKey != nil {
		t.Errorf("ReadFiles: %v, user %q password %q key %v; want actor1, s3cret, no key", err, cfg.User, cfg.Password, cfg.TrustKey)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if err := cfg.ReadFiles(missing, ""); err == nil || !strings.HasPrefix(err.Error(), "--credentials: ") {
		t.Errorf("missing credentials: %v", err)
	}
	if err := cfg.ReadFiles("", missing); err == nil || !strings.HasPrefix(err.Error(), "--trust-key: ") {
		t.Errorf("missing key: %v", err)
	}
}
