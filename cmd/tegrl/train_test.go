package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainCommand: a tiny run writes the policy, log, curve, summary and
// checkpoint; the policy then runs in simulate and ab like a built-in
// scheduler; a resumed run refuses other flags.
func TestTrainCommand(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--preset", "small", "--out", dir, "--steps", "600", "--batch", "200", "--segment", "50",
		"--machines", "24", "--episode", "900", "--actors", "1", "--sync", "--candidates", "8", "--hidden", "16",
		"--eval-seeds", "1-2", "--eval-ref", "langevin", "--checkpoint-every", "1", "--ent-coef", "0.003", "--gamma", "0.95", "--shaping", "100", "--log-level", "warn"}
	out, stderr, err := run(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("train: %v\nstderr: %s", err, stderr)
	}
	var sum map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"config", "updates", "final_update", "eval", "paired_vs_policy", "last_10_updates"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	var cfg struct {
		PPO struct {
			EntCoef float64 `json:"ent_coef"`
			Gamma   float64 `json:"gamma"`
		} `json:"ppo"`
		Env struct {
			Shaping      float64 `json:"shaping_s"`
			ShapingGamma float64 `json:"shaping_gamma"`
		} `json:"env"`
	}
	if err := json.Unmarshal(sum["config"], &cfg); err != nil || cfg.PPO.EntCoef != 0.003 || cfg.PPO.Gamma != 0.95 {
		t.Errorf("config's entropy coefficient %v and γ %v (%v), want --ent-coef's 0.003 and --gamma's 0.95", cfg.PPO.EntCoef, cfg.PPO.Gamma, err)
	}
	if cfg.Env.Shaping != 100 || cfg.Env.ShapingGamma != 0.95 {
		t.Errorf("config's shaping %v s with γ %v, want --shaping's 100 with --gamma's 0.95", cfg.Env.Shaping, cfg.Env.ShapingGamma)
	}
	for _, f := range []string{"policy.safetensors", "train_log.csv", "learning_curve.png", "summary.json", "checkpoint/state.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "train_log.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 4 || !strings.HasPrefix(string(csv), "update,policy_version,steps,") {
		t.Errorf("train_log.csv: %d lines:\n%s", lines, csv)
	}
	sim, stderr, err := run(t, "simulate", "--scheduler", dir+",langevin", "--machines", "24", "--duration", "15m", "--json", "--log-level", "warn")
	if err != nil {
		t.Fatalf("simulate with the policy: %v\n%s", err, stderr)
	}
	if n := strings.Count(sim, "\n"); n != 2 || !strings.Contains(sim, `"scheduler":"`+dir+`"`) {
		t.Errorf("simulate output:\n%s", sim)
	}
	// Resuming with another seed is refused.
	if _, _, err := run(t, append(args, "--seed", "9", "--resume", filepath.Join(dir, "checkpoint"), "--out", t.TempDir())...); err == nil {
		t.Error("resume with another seed accepted")
	}
}

// TestTrainOfflineCommand: a recorded langevin run feeds behaviour
// cloning, whose policy is evaluated and then starts an online run.
func TestTrainOfflineCommand(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec")
	if _, stderr, err := run(t, "dataset", "record", "--scheduler", "langevin", "--machines", "24", "--duration", "15m",
		"--seed", "3", "--out", rec, "--log-level", "warn"); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	dir := t.TempDir()
	common := []string{"--preset", "small", "--machines", "24", "--episode", "900", "--candidates", "8", "--hidden", "16",
		"--eval-seeds", "1-2", "--eval-ref", "langevin", "--log-level", "warn"}
	out, stderr, err := run(t, append([]string{"train", "--offline", rec, "--offline-method", "awr", "--offline-epochs", "2", "--out", dir, "--json"}, common...)...)
	if err != nil {
		t.Fatalf("offline: %v\n%s", err, stderr)
	}
	var sum struct {
		Decisions int `json:"decisions"`
		Log       []struct {
			Agreement float64 `json:"agreement"`
		} `json:"log"`
		Eval []json.RawMessage `json:"eval"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Decisions == 0 || len(sum.Log) != 2 || len(sum.Eval) != 2 {
		t.Fatalf("offline summary (%v):\n%s", err, out)
	}
	online := t.TempDir()
	if _, stderr, err := run(t, append([]string{"train", "--init", dir, "--steps", "400", "--batch", "200", "--segment", "50",
		"--actors", "1", "--out", online}, common...)...); err != nil {
		t.Fatalf("online from the offline policy: %v\n%s", err, stderr)
	}
}

// TestTrainSaturatePreset: the saturate preset learns on the saturation
// experiment, evaluates against fgd and bestfit, and tegrl saturate runs
// its policy file like a built-in scheduler, deterministically.
func TestTrainSaturatePreset(t *testing.T) {
	nodes, pods := writeTrace(t)
	dir := t.TempDir()
	out, stderr, err := run(t, "train", "--preset", "saturate", "--nodes", nodes, "--pods", pods, "--out", dir, "--steps", "400",
		"--batch", "200", "--segment", "50", "--eval-seeds", "1-2", "--checkpoint-every", "0", "--log-level", "warn", "--json")
	if err != nil {
		t.Fatalf("train: %v\nstderr: %s", err, stderr)
	}
	var sum struct {
		Saturation []struct {
			Scheduler string `json:"scheduler"`
		} `json:"saturation"`
		Config struct {
			Policy struct {
				Features string `json:"features"`
			} `json:"policy"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, out)
	}
	if len(sum.Saturation) != 3 || sum.Saturation[0].Scheduler != "policy" || sum.Config.Policy.Features != "saturate" {
		t.Fatalf("summary: %s", out)
	}
	policy := filepath.Join(dir, "policy.safetensors")
	args := []string{"saturate", "--nodes", nodes, "--pods", pods, "--scheduler", "fgd," + policy, "--seeds", "1-2", "--json", "--log-level", "warn"}
	a, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("saturate with the policy: %v\n%s", err, stderr)
	}
	if n := strings.Count(a, "\n"); n != 2 || !strings.Contains(a, `"scheduler":"`+policy+`"`) {
		t.Errorf("saturate output:\n%s", a)
	}
	if b, _, _ := run(t, args...); b != a {
		t.Errorf("two saturate runs of the policy differ:\n%s\n%s", a, b)
	}
	// Training is deterministic too (one actor in lockstep).
	dir2 := t.TempDir()
	if _, stderr, err := run(t, "train", "--preset", "saturate", "--nodes", nodes, "--pods", pods, "--out", dir2, "--steps", "400",
		"--batch", "200", "--segment", "50", "--eval-seeds", "", "--checkpoint-every", "0", "--log-level", "warn"); err != nil {
		t.Fatalf("second train: %v\n%s", err, stderr)
	}
	p1, _ := os.ReadFile(policy)
	p2, _ := os.ReadFile(filepath.Join(dir2, "policy.safetensors"))
	if len(p1) == 0 || string(p1) != string(p2) {
		t.Error("two saturate trainings with the same seed wrote different policies")
	}
}
