package rl

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestPolicyFitCommitted: the committed policies' fits, read from what
// their files already carry: the saturate preset's feature layout, the
// small preset's 96 machines, and no known scale for a distilled student.
func TestPolicyFitCommitted(t *testing.T) {
	want := map[string]PolicyFit{
		"saturate":    {Env: EnvSaturate},
		"small":       {Env: EnvCluster, Machines: 96},
		"small-gnn":   {Env: EnvCluster, Machines: 96},
		"student-gnn": {Env: EnvCluster},
	}
	for name, w := range want {
		payload, err := os.ReadFile("../docs/policies/" + name + ".safetensors")
		if err != nil {
			t.Fatal(err)
		}
		p, meta, err := LoadPolicy(payload)
		if err != nil {
			t.Fatal(err)
		}
		if got := FitOf(p.Cfg, meta); got != w {
			t.Errorf("%s: fit %+v, want %+v", name, got, w)
		}
	}
}

// TestPolicyFitCheck: the environment must match; the scale warns beyond
// four times (385 machines on a 96-machine policy, and 23), not at four
// times (384, 24) nor when either scale is unknown.
func TestPolicyFitCheck(t *testing.T) {
	small := PolicyFit{Env: EnvCluster, Machines: 96}
	if err := small.Check(EnvSaturate, 0, nil); err == nil || !strings.Contains(err.Error(), "cluster simulation") {
		t.Fatalf("cluster policy in saturate: %v", err)
	}
	if err := (PolicyFit{Env: EnvSaturate}).Check(EnvCluster, 96, nil); err == nil || !strings.Contains(err.Error(), "saturation experiment") {
		t.Fatalf("saturate policy in a cluster: %v", err)
	}
	for _, c := range []struct {
		fit      PolicyFit
		machines int
		warn     bool
	}{{small, 385, true}, {small, 23, true}, {small, 384, false}, {small, 24, false}, {small, 96, false},
		{small, 0, false}, {PolicyFit{Env: EnvCluster}, 10000, false}} {
		var b bytes.Buffer
		if err := c.fit.Check(EnvCluster, c.machines, slog.New(slog.NewTextHandler(&b, nil))); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "level=WARN"); got != c.warn {
			t.Errorf("%+v on %d machines: warned %v, want %v (%s)", c.fit, c.machines, got, c.warn, b.String())
		}
	}
	// A file's own machine count wins over its preset's.
	if f := FitOf(PolicyConfig{}, map[string]string{MetaMachines: "500", metaPreset: "small"}); f.Machines != 500 {
		t.Fatalf("fit %+v, want 500 machines", f)
	}
}

// TestCheckSchedulerFit: the committed saturation policy is refused for a
// cluster and accepted for saturate; the small policy the reverse; a
// built-in fits both.
func TestCheckSchedulerFit(t *testing.T) {
	sat, small := "../docs/policies/saturate.safetensors", "../docs/policies/small.safetensors"
	for _, c := range []struct {
		spec, env string
		ok        bool
	}{{sat, EnvCluster, false}, {sat, EnvSaturate, true}, {small, EnvSaturate, false}, {small, EnvCluster, true},
		{"fgd", EnvCluster, true}, {"fgd", EnvSaturate, true}} {
		err := CheckSchedulerFit(c.spec, c.env, 96, nil)
		if (err == nil) != c.ok {
			t.Errorf("%s in %s: %v", c.spec, c.env, err)
		}
	}
}
