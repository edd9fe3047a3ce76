package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeKubeFlags: --kubeconfig refuses a --cluster, a bad resync and
// an unreadable kubeconfig before serving anything.
func TestServeKubeFlags(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("this: is: not: a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", bad, "--cluster", "synthetic"}, "--cluster synthetic with --kubeconfig"},
		{[]string{"--kubeconfig", bad, "--kube-resync", "0s"}, "--kube-resync"},
		{[]string{"--kubeconfig", filepath.Join(t.TempDir(), "missing")}, "--kubeconfig"},
		{[]string{"--kubeconfig", bad}, "--kubeconfig"},
	} {
		_, _, err := run(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
