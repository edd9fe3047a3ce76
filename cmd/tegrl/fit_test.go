package main

import (
	"strings"
	"testing"
)

// TestPolicyFitRefused: a cluster policy given to saturate and the
// saturation policy given to simulate, ab or dataset record are refused with
// the environment named, before anything runs.
func TestPolicyFitRefused(t *testing.T) {
	nodes, pods := writeTrace(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"saturate", "--nodes", nodes, "--pods", pods, "--scheduler", "../../docs/policies/small.safetensors", "--seeds", "1"}, "cannot schedule the saturation experiment"},
		{[]string{"simulate", "--scheduler", "../../docs/policies/saturate.safetensors", "--machines", "20", "--duration", "60"}, "cannot schedule the cluster simulation"},
		{[]string{"ab", "--a", "fgd", "--b", "../../docs/policies/saturate.safetensors", "--machines", "20", "--seeds", "1-2"}, "cannot schedule the cluster simulation"},
		{[]string{"dataset", "record", "--scheduler", "../../docs/policies/saturate.safetensors", "--machines", "20", "--duration", "60", "--out", t.TempDir()}, "cannot schedule the cluster simulation"},
	} {
		_, stderr, err := run(t, append(c.args, "--log-level", "warn")...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q\n%s", c.args[0], err, c.want, stderr)
		}
	}
}

// TestPolicyScaleWarned: the 96-machine small policy on 400 machines runs,
// with a warning naming both scales; on 96 it runs without one.
func TestPolicyScaleWarned(t *testing.T) {
	for _, c := range []struct {
		machines string
		warn     bool
	}{{"400", true}, {"96", false}} {
		_, stderr, err := run(t, "simulate", "--scheduler", "../../docs/policies/small.safetensors", "--machines", c.machines, "--duration", "30", "--log-level", "warn")
		if err != nil {
			t.Fatalf("%s machines: %v\n%s", c.machines, err, stderr)
		}
		if got := strings.Contains(stderr, "trained_machines=96"); got != c.warn {
			t.Errorf("%s machines: warned %v, want %v:\n%s", c.machines, got, c.warn, stderr)
		}
	}
}
