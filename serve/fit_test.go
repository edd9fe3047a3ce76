package serve

import (
	"os"
	"strings"
	"testing"
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
