package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/distill"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newDistillCmd) }

// distillSummary is summary.json of tegrl distill.
type distillSummary struct {
	Command   string             `json:"command"`
	Teacher   string             `json:"teacher"`
	Data      string             `json:"data,omitempty"` // recordings learned from (else the teacher\'s episodes)
	Config    distill.Config     `json:"config"`
	Env       rl.EnvSpec         `json:"env"`
	Decisions int                `json:"decisions"`
	Log       []distill.Stats    `json:"log"`
	Params    map[string]int     `json:"params"`
	LatencyUS map[string]float64 `json:"network_latency_us"` // one decision's forward pass and sampling, featurisation excluded
	// DecisionUS is a whole evaluation-mode decision (Policy.Decide:
	// candidates, featurisation and network), on the same live states for
	// both, on a synthetic cluster of DecisionMachines machines.
	DecisionUS       map[string]float64 `json:"decision_latency_us,omitempty"`
	DecisionMachines int                `json:"decision_machines,omitempty"`
	EvalSeeds        []uint64           `json:"eval_seeds,omitempty"`
	Eval             []evalRow          `json:"eval,omitempty"`
	// ReturnRatio is the teacher's mean slowdown over the student's on the
	// held-out seeds (1: as good; above 1: the student is better).
	ReturnRatio float64 `json:"return_ratio,omitempty"`
}

func newDistillCmd(a *app) *cobra.Command {
	var teacherPath, out, evalSeeds, data, natsURL string
	var online, useNATS bool
	var rounds int
	var hidden, decisions, epochs, latMachines int
	var seed uint64
	var jsonOut bool
	spec := rl.EnvSpec{Machines: 96, Load: 0.9, Episode: 7200}
	cmd := &cobra.Command{
		Use:   "distill",
		Short: "Distil a trained policy into a smaller student (KL at T=2 on placement, moment matching on the Beta heads, value)",
		Long: `distill runs the teacher policy on training episodes (sampling, as in
training), labels the decisions it visits with its outputs, and fits a
smaller student with the same inputs and heads: T²·KL at temperature 2 on the
placement distribution, squared error of the Beta heads' means and log
concentrations, and the value. It writes DIR/policy.safetensors and
DIR/summary.json (top-1 agreement, the network latency of both, their
whole-decision latency on a synthetic cluster of --latency-machines
machines, and the held-out comparison of teacher and student). The
student is a ReLU MLP of width --hidden, without graph layers.`,
		Example: `  tegrl distill --teacher docs/policies/small.safetensors --out runs/student`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if teacherPath == "" || out == "" {
				return fmt.Errorf("--teacher and --out are required")
			}
			payload, path, err := rl.ReadPolicyFile(teacherPath)
			if err != nil {
				return err
			}
			teacher, _, err := rl.LoadPolicy(payload)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			cfg := distill.DefaultConfig(teacher.Cfg)
			cfg.Student.Hidden, cfg.Epochs, cfg.Seed = hidden, epochs, seed
			ctx := cmd.Context()
			var s *rl.Samples
			var student *rl.Policy
			var log []distill.Stats
			if online {
				// The student acts; its decisions come back over NATS (or
				// channels), are labelled by the teacher and refit it.
				ocfg := distill.OnlineConfig{Config: cfg, Env: spec, Rounds: rounds, Decisions: decisions / rounds / 100 * 100,
					SegmentLen: 100, RunID: "distill", NATSURL: natsURL, UseNATS: useNATS}
				if student, log, err = distill.Online(ctx, teacher, ocfg); err != nil {
					return err
				}
				if s, err = distill.Collect(ctx, student, spec, min(decisions, 5000), seed*rl.DistillSeedStride+rl.DistillStudentSeeds, teacher.Cfg.Encoder == rl.EncoderGNN); err != nil {
					return err
				}
			} else if data != "" {
				// Offline: the decisions of recorded runs, re-created as in
				// train --offline and labelled by the teacher.
				var od rl.OfflineData
				if err := loadRecordings(data, "", teacher, rl.DistillGamma, 1, &od, nil); err != nil {
					return err
				}
				s = &od.S
			} else if s, err = distill.Collect(ctx, teacher, spec, decisions, seed*rl.DistillSeedStride+rl.DistillTeacherSeeds, false); err != nil {
				return err
			}
			if student == nil {
				if student, log, err = distill.Train(teacher, s, cfg); err != nil {
					return err
				}
			}
			sp, err := student.EncodeParams(map[string]string{"tegrl.distilled_from": teacherPath})
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, "policy.safetensors"), sp, 0o644); err != nil {
				return err
			}
			sum := distillSummary{Command: report.CommandLine(a.argv), Teacher: teacherPath, Config: cfg, Env: spec, Data: data,
				Decisions: s.Len(), Log: log,
				Params:    map[string]int{"teacher": teacher.Params().Count(), "student": student.Params().Count()},
				LatencyUS: map[string]float64{"teacher": netLatency(teacher, s), "student": netLatency(student, s)}}
			if latMachines > 0 {
				tu, su, err := decisionLatency(teacher, student, latMachines, 2000)
				if err != nil {
					return err
				}
				sum.DecisionUS = map[string]float64{"teacher": tu, "student": su}
				sum.DecisionMachines = latMachines
			}
			if evalSeeds != "" {
				seeds, err := report.ParseSeeds(evalSeeds)
				if err != nil {
					return err
				}
				te, err := rl.PolicyEntry("teacher", payload)
				if err != nil {
					return err
				}
				se, err := rl.PolicyEntry("student", sp)
				if err != nil {
					return err
				}
				lv, _ := rl.BuiltinEntry("langevin")
				runs, err := rl.Evaluate(ctx, spec.Config().Source, spec.Episode, seeds, []rl.EvalEntry{te, se, lv})
				if err != nil {
					return err
				}
				n := len(seeds)
				for k, name := range []string{"teacher", "student", "langevin"} {
					sum.Eval = append(sum.Eval, evalRowOf(name, runs[k*n:(k+1)*n]))
				}
				sum.EvalSeeds, sum.ReturnRatio = seeds, sum.Eval[0].MeanSlowdown/sum.Eval[1].MeanSlowdown
			}
			js, err := writeJSONFile(filepath.Join(out, "summary.json"), sum)
			if err != nil {
				return err
			}
			if jsonOut {
				_, err = fmt.Fprintf(a.stdout, "%s\n", js)
				return err
			}
			last := log[len(log)-1]
			fmt.Fprintf(a.stdout, "student (%d parameters, teacher %d) on %d decisions: top-1 agreement %.3f; network latency %.1f µs (teacher %.1f µs)\n",
				sum.Params["student"], sum.Params["teacher"], s.Len(), last.Agreement, sum.LatencyUS["student"], sum.LatencyUS["teacher"])
			if sum.DecisionUS != nil {
				fmt.Fprintf(a.stdout, "  whole decision on %d machines: student %.1f µs, teacher %.1f µs (%.1fx faster)\n",
					latMachines, sum.DecisionUS["student"], sum.DecisionUS["teacher"], sum.DecisionUS["teacher"]/sum.DecisionUS["student"])
			}
			for _, r := range sum.Eval {
				fmt.Fprintf(a.stdout, "  %-8s slowdown %.3f  SLA viol %.2f%%  safety viol %d\n", r.Scheduler, r.MeanSlowdown, 100*r.SLAViolationRate, r.SafetyViolations)
			}
			if sum.ReturnRatio > 0 {
				fmt.Fprintf(a.stdout, "  teacher/student slowdown ratio %.3f (1: as good; below 1: the student is worse)\n", sum.ReturnRatio)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&teacherPath, "teacher", "", "teacher policy (a policy file or train output folder)")
	fl.StringVar(&out, "out", "", "output folder")
	fl.IntVar(&hidden, "hidden", 8, "student width (the teacher's inputs, candidates and heads)")
	fl.IntVar(&decisions, "decisions", 20000, "teacher decisions to learn from")
	fl.BoolVar(&online, "online", false, "online: the student acts and learns on the states it visits, labelled by the teacher, over NATS")
	fl.IntVar(&rounds, "rounds", 5, "online rounds (act, label, refit)")
	fl.BoolVar(&useNATS, "online-nats", true, "online: move the student's decisions over NATS (false: in-process channels)")
	fl.StringVar(&natsURL, "nats", "", "online: NATS server URL (default: an embedded server)")
	fl.StringVar(&data, "data", "", "learn from the decisions of recorded runs (tegrl dataset record folders, comma-separated) instead of the teacher's own episodes")
	fl.IntVar(&epochs, "epochs", 20, "passes over them")
	fl.Uint64Var(&seed, "seed", 1, "seed of the episodes, the student's initialisation and the minibatches")
	fl.IntVar(&spec.Machines, "machines", spec.Machines, "machines of the synthetic training cluster")
	fl.Float64Var(&spec.Load, "load", spec.Load, "offered load")
	fl.Float64Var(&spec.Episode, "episode", spec.Episode, "simulated seconds per episode")
	fl.StringVar(&evalSeeds, "eval-seeds", "101-110", "held-out seeds comparing teacher, student and langevin (\"\" skips)")
	fl.IntVar(&latMachines, "latency-machines", 1523, "synthetic cluster size on which whole decisions of teacher and student are timed (0 skips)")
	fl.BoolVar(&jsonOut, "json", false, "print the summary as JSON")
	return cmd
}

// decisionLatency is the mean wall time of a whole evaluation-mode
// decision (Policy.Decide) of teacher and student, over n decisions of an
// hour-long episode on a synthetic cluster of the given size at load 0.9,
// after a warm-up of 300 decisions (as BenchmarkPolicyDecide: the first
// ones see an empty cluster and history): both decide on the same states
// with the same candidate draws, and the student's action is applied.
func decisionLatency(teacher, student *rl.Policy, machines, n int) (teacherUS, studentUS float64, err error) {
	spec := rl.EnvSpec{Machines: machines, Load: 0.9, Episode: 3600}
	e, err := rl.NewClusterEnv(spec.Config())
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	d, err := e.Reset(1)
	if err != nil {
		return 0, 0, err
	}
	for k := 0; k < 300 && d.Obs != nil; k++ {
		a, ok := student.Decide(d)
		if !ok {
			a = env.Wait
		}
		var done bool
		if d, _, done = e.Step(a); done {
			return 0, 0, fmt.Errorf("latency episode ended during the warm-up")
		}
	}
	var tt, ts time.Duration
	k := 0
	for ; k < n && d.Obs != nil; k++ {
		d1, d2 := d, d
		d1.RNG, d2.RNG = rand.New(rand.NewPCG(uint64(k), 1)), rand.New(rand.NewPCG(uint64(k), 1))
		start := time.Now()
		teacher.Decide(d1)
		mid := time.Now()
		a, ok := student.Decide(d2)
		ts += time.Since(mid)
		tt += mid.Sub(start)
		if !ok {
			a = env.Wait
		}
		var done bool
		if d, _, done = e.Step(a); done {
			break
		}
	}
	k = max(k, 1)
	return float64(tt.Nanoseconds()) / 1000 / float64(k), float64(ts.Nanoseconds()) / 1000 / float64(k), nil
}

// netLatency is the mean wall time of one decision's forward pass and
// sampling (featurisation excluded) over up to 2,000 collected decisions.
func netLatency(p *rl.Policy, s *rl.Samples) float64 {
	rng := rand.New(rand.NewPCG(1, 1))
	n := min(s.Len(), 2000)
	start := time.Now()
	for i := 0; i < n; i++ {
		p.Sample(s, i, rng, true)
	}
	return float64(time.Since(start).Microseconds()) / float64(max(1, n))
}
