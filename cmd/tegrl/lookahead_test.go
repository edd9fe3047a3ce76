package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/rl"
)

func TestLookaheadCommand(t *testing.T) {
	args := []string{"lookahead", "--base", "kube", "--load", "1.1", "--duration", "1h", "--seeds", "102", "--every", "8", "--json", "--log-level", "warn"}
	out, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("lookahead: %v\nstderr: %s", err, stderr)
	}
	var got struct {
		Base  string             `json:"base"`
		Every int                `json:"every"`
		Seeds []rl.LookaheadSeed `json:"seeds"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	if got.Base != "kube" || got.Every != 8 || len(got.Seeds) != 1 || got.Seeds[0].Seed != 102 {
		t.Fatalf("header %+v", got)
	}
	r := got.Seeds[0]
	if r.Evaluated == 0 || r.Rollouts < r.Evaluated*2 || r.Decisions < 8*(r.Evaluated-1) {
		t.Errorf("counts %+v", r)
	}
	if !(r.LookAccrued <= r.BaseAccrued) || r.BaseAccrued <= 0 {
		t.Errorf("lookahead accrued %v, base %v", r.LookAccrued, r.BaseAccrued)
	}
	// The base's own run is what tegrl simulate reports for it (lookahead
	// seeds each seed's cluster with the seed).
	sim, _, err := run(t, "simulate", "--scheduler", "kube", "--machines", "96", "--load", "1.1", "--duration", "1h", "--seed", "102", "--cluster-seed", "102", "--json", "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MeanSlowdown float64 `json:"mean_slowdown"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(sim, "\n", 2)[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m.MeanSlowdown != r.BaseSlowdown {
		t.Errorf("base mean slowdown %v, tegrl simulate's %v", r.BaseSlowdown, m.MeanSlowdown)
	}
	again, _, err := run(t, args...)
	if err != nil || again != out {
		t.Errorf("a second run printed other bytes (err %v)", err)
	}
	for _, bad := range [][]string{{"--every", "0"}, {"--candidates", "1"}, {"--support", "1.5"}, {"--support", "-1"}, {"--base", "nope"}, {"--seeds", "x"}} {
		if _, _, err := run(t, append([]string{"lookahead", "--duration", "60", "--log-level", "warn"}, bad...)...); err == nil {
			t.Errorf("lookahead %v: no error", bad)
		}
	}
}
