package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `tegrl version` and `tegrl --version` print the version
// from the build information, with the Go version.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := run(t, args...)
		if err != nil {
			t.Fatalf("tegrl %v: %v", args, err)
		}
		if !strings.HasPrefix(out, "tegrl ") || !strings.Contains(out, runtime.Version()) || !strings.HasSuffix(out, "\n") {
			t.Errorf("tegrl %v: %q", args, out)
		}
	}
}
