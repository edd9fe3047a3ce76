package report

import "testing"

// TestABRuns: A and B on three seeds, a reference named like A reusing
// A's runs and another one of its own: 2 x 3 + 3 runs.
func TestABRuns(t *testing.T) {
	cfg := ABConfig{A: Contender{Name: "fgd"}, B: Contender{Name: "kube"}, Seeds: []uint64{1, 2, 3},
		Reference: []Contender{{Name: "fgd"}, {Name: "bestfit"}}}
	if got := cfg.Runs(); got != 9 {
		t.Errorf("Runs = %d, want 9", got)
	}
}
