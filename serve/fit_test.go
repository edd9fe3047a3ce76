package serve

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/rl"
)

// TestLoadRefusesSaturatePolicy: hot-loading the committed saturation
// policy into a cluster arm is refused with a message naming the
// environment, and the arm keeps the policy it had.
func TestLoadRefusesSaturatePolicy(t *testing.T) {
	payload, err := os.ReadFile("../docs/policies/saturate.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "fgd", Weight: 1}}})
	if _, err := s.Load("a", "saturate", "upload", payload, ""); err == nil || !strings.Contains(err.Error(), "saturation experiment") {
		t.Fatalf("load: %v, want a refusal naming the saturation experiment", err)
	}
	if v := servedVersion(t, s.Handler(), "k"); v != "fgd" {
		t.Fatalf("the arm serves %q after the refusal, want fgd", v)
	}
}

// TestScaleWarning: a policy trained on 1,000 machines warns when it
// starts serving the 64-machine cluster, and again when a state update
// redefines the cluster; one trained on 64 does not.
func TestScaleWarning(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := newTestService(t, Config{Arms: []ArmConfig{{Name: "a", Spec: "hot", Weight: 1}}, Logger: log})
	if _, err := s.Load("a", "near", "upload", policyPayload(t, 1, map[string]string{rl.MetaMachines: "64"}), ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "training scale") {
		t.Fatalf("warned for a policy trained on the live size: %s", buf.String())
	}
	if _, err := s.Load("a", "far", "upload", policyPayload(t, 1, map[string]string{rl.MetaMachines: "1000"}), ""); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "training scale"); n != 1 || !strings.Contains(buf.String(), "trained_machines=1000 machines=64") {
		t.Fatalf("%d warnings after a hot-load far from the training scale: %s", n, buf.String())
	}
	m, err := s.newModel(testCluster(t, 32))
	if err != nil {
		t.Fatal(err)
	}
	s.setModel(m)
	if n := strings.Count(buf.String(), "training scale"); n != 2 || !strings.Contains(buf.String(), "trained_machines=1000 machines=32") {
		t.Fatalf("%d warnings after the cluster changed: %s", n, buf.String())
	}
}
