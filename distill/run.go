package distill

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

// Timing of the network and whole-decision latencies in a Summary.
const (
	// LatencyDecisions is the most decisions each latency is averaged over.
	LatencyDecisions = 2000
	// LatencyWarmup is the decisions of the whole-decision benchmark's
	// episode before timing starts, as BenchmarkPolicyDecide: the first
	// ones see an empty cluster and history.
	LatencyWarmup = 300
	// LatencyLoad and LatencyEpisode are the offered load and simulated
	// seconds of the whole-decision benchmark's episode.
	LatencyLoad    = 0.9
	LatencyEpisode = 3600
)

// RunConfig is a distillation run of tegrl distill.
type RunConfig struct {
	// Teacher is read with rl.ReadPolicyFile.
	Teacher string `flag:"teacher" usage:"teacher policy (a policy file or train output folder)"`
	// Hidden, Epochs and Seed set the student's width, the passes over the
	// decisions and the seed of the episodes, the student's
	// initialisation and the minibatches; the rest is DefaultConfig.
	Hidden, Epochs int
	Seed           uint64     `flag:"seed" default:"1" usage:"seed of the episodes, the student's initialisation and the minibatches"`
	Env            rl.EnvSpec // the training episodes' environment
	Decisions      int        // teacher decisions to learn from
	// Online makes the student act and learn in Rounds rounds on the
	// states it visits, labelled by the teacher, its decisions moved over
	// NATS (UseNATS; NATSURL "" starts an embedded server) or channels.
	Online  bool `flag:"online" usage:"online: the student acts and learns on the states it visits, labelled by the teacher, over NATS"`
	Rounds  int
	UseNATS bool   `flag:"online-nats" default:"true" usage:"online: move the student's decisions over NATS (false: in-process channels)"`
	NATSURL string `flag:"nats" usage:"online: NATS server URL (default: an embedded server)"`
	// Data, when set, names recorded runs (tegrl dataset record folders,
	// comma-separated) whose decisions the student learns from instead of
	// the teacher's own episodes.
	Data string `flag:"data" usage:"learn from the decisions of recorded runs (tegrl dataset record folders, comma-separated) instead of the teacher's own episodes"`
	// LatencyMachines is the synthetic cluster size on which whole
	// decisions are timed (0 skips).
	LatencyMachines int `flag:"latency-machines" default:"1523" usage:"synthetic cluster size on which whole decisions of teacher and student are timed (0 skips)"`
	// EvalSeeds are the held-out seeds comparing teacher, student and
	// langevin (none skips).
	EvalSeeds []uint64
	// Out is created if needed and receives policy.safetensors and summary.json.
	Out     string `flag:"out" usage:"output folder"`
	Command string // the command line, for summary.json
}

// Summary is summary.json of tegrl distill.
type Summary struct {
	Command   string             `json:"command"`
	Teacher   string             `json:"teacher"`
	Data      string             `json:"data,omitempty"` // recordings learned from (else the teacher's episodes)
	Config    Config             `json:"config"`
	Env       rl.EnvSpec         `json:"env"`
	Decisions int                `json:"decisions"`
	Log       []Stats            `json:"log"`
	Params    map[string]int     `json:"params"`
	LatencyUS map[string]float64 `json:"network_latency_us"` // one decision's forward pass and sampling, featurisation excluded
	// DecisionUS is a whole evaluation-mode decision (Policy.Decide:
	// candidates, featurisation and network), on the same live states for
	// both, on a synthetic cluster of DecisionMachines machines.
	DecisionUS       map[string]float64 `json:"decision_latency_us,omitempty"`
	DecisionMachines int                `json:"decision_machines,omitempty"`
	EvalSeeds        []uint64           `json:"eval_seeds,omitempty"`
	Eval             []report.EvalRow   `json:"eval,omitempty"`
	// ReturnRatio is the teacher's mean slowdown over the student's on the
	// held-out seeds (1: as good; above 1: the student is better).
	ReturnRatio float64 `json:"return_ratio,omitempty"`
}

// Run distils the teacher into a student, writes the student and the
// summary into r.Out, and returns the summary.
func Run(ctx context.Context, r RunConfig) (*Summary, error) {
	payload, path, err := rl.ReadPolicyFile(r.Teacher)
	if err != nil {
		return nil, err
	}
	teacher, _, err := rl.LoadPolicy(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg := DefaultConfig(teacher.Cfg)
	cfg.Student.Hidden, cfg.Epochs, cfg.Seed = r.Hidden, r.Epochs, r.Seed
	s, student, log, err := learn(ctx, teacher, cfg, r)
	if err != nil {
		return nil, err
	}
	sp, err := student.EncodeParams(map[string]string{"tegrl.distilled_from": r.Teacher})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.Out, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(r.Out, "policy.safetensors"), sp, 0o644); err != nil {
		return nil, err
	}
	sum := &Summary{Command: r.Command, Teacher: r.Teacher, Config: cfg, Env: r.Env, Data: r.Data, Decisions: s.Len(), Log: log,
		Params:    map[string]int{"teacher": teacher.Params().Count(), "student": student.Params().Count()},
		LatencyUS: map[string]float64{"teacher": NetLatency(teacher, s), "student": NetLatency(student, s)}}
	if r.LatencyMachines > 0 {
		tu, su, err := DecisionLatency(teacher, student, r.LatencyMachines, LatencyDecisions)
		if err != nil {
			return nil, err
		}
		sum.DecisionUS = map[string]float64{"teacher": tu, "student": su}
		sum.DecisionMachines = r.LatencyMachines
	}
	if len(r.EvalSeeds) > 0 {
		if sum.Eval, err = evaluate(ctx, payload, sp, r.Env, r.EvalSeeds); err != nil {
			return nil, err
		}
		sum.EvalSeeds, sum.ReturnRatio = r.EvalSeeds, sum.Eval[0].MeanSlowdown/sum.Eval[1].MeanSlowdown
	}
	if _, err := report.WriteJSONFile(filepath.Join(r.Out, "summary.json"), sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// learn fits the student: online (Online), on recorded runs' decisions or
// on the teacher's own episodes (Collect, Train). It returns the decisions
// the latencies are timed on (the online student's own, after its last
// round).
func learn(ctx context.Context, teacher *rl.Policy, cfg Config, r RunConfig) (*rl.Samples, *rl.Policy, []Stats, error) {
	switch {
	case r.Online:
		ocfg := OnlineConfig{Config: cfg, Env: r.Env, Rounds: r.Rounds, Decisions: r.Decisions / r.Rounds / rl.DefaultSegmentLen * rl.DefaultSegmentLen,
			SegmentLen: rl.DefaultSegmentLen, RunID: "distill", NATSURL: r.NATSURL, UseNATS: r.UseNATS}
		student, log, err := Online(ctx, teacher, ocfg)
		if err != nil {
			return nil, nil, nil, err
		}
		s, err := Collect(ctx, student, r.Env, min(r.Decisions, rl.DistillOnlineCollect), r.Seed*rl.DistillSeedStride+rl.DistillStudentSeeds, teacher.Cfg.Encoder == rl.EncoderGNN)
		return s, student, log, err
	case r.Data != "":
		// The decisions of recorded runs, re-created as in train --offline
		// and labelled by the teacher.
		var od rl.OfflineData
		if err := rl.LoadRecordings(strings.Split(r.Data, ","), "", teacher, rl.DistillGamma, 1, &od, nil); err != nil {
			return nil, nil, nil, err
		}
		student, log, err := Train(teacher, &od.S, cfg)
		return &od.S, student, log, err
	}
	s, err := Collect(ctx, teacher, r.Env, r.Decisions, r.Seed*rl.DistillSeedStride+rl.DistillTeacherSeeds, false)
	if err != nil {
		return nil, nil, nil, err
	}
	student, log, err := Train(teacher, s, cfg)
	return s, student, log, err
}

// evaluate runs teacher, student (safetensors bytes) and langevin on the
// held-out seeds: a row each, in that order.
func evaluate(ctx context.Context, teacher, student []byte, spec rl.EnvSpec, seeds []uint64) ([]report.EvalRow, error) {
	te, err := rl.PolicyEntry("teacher", teacher)
	if err != nil {
		return nil, err
	}
	se, err := rl.PolicyEntry("student", student)
	if err != nil {
		return nil, err
	}
	lv, _ := rl.BuiltinEntry("langevin")
	runs, err := rl.Evaluate(ctx, spec.Config().Source, spec.Episode, seeds, []rl.EvalEntry{te, se, lv})
	if err != nil {
		return nil, err
	}
	n := len(seeds)
	var rows []report.EvalRow
	for k, name := range []string{"teacher", "student", "langevin"} {
		ms := make([]env.Metrics, n)
		for i, run := range runs[k*n : (k+1)*n] {
			ms[i] = run.Metrics
		}
		rows = append(rows, report.EvalRowOf(name, ms))
	}
	return rows, nil
}

// DecisionLatency is the mean wall time in µs of a whole evaluation-mode
// decision (Policy.Decide) of teacher and student, over n decisions of an
// episode on a synthetic cluster of the given size, after LatencyWarmup
// decisions: both decide on the same states with the same candidate
// draws, and the student's action is applied.
func DecisionLatency(teacher, student *rl.Policy, machines, n int) (teacherUS, studentUS float64, err error) {
	spec := rl.EnvSpec{Machines: machines, Load: LatencyLoad, Episode: LatencyEpisode}
	e, err := rl.NewClusterEnv(spec.Config())
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	d, err := e.Reset(1)
	if err != nil {
		return 0, 0, err
	}
	for k := 0; k < LatencyWarmup && d.Obs != nil; k++ {
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

// NetLatency is the mean wall time in µs of one decision's forward pass
// and sampling (featurisation excluded) over up to LatencyDecisions
// decisions of s.
func NetLatency(p *rl.Policy, s *rl.Samples) float64 {
	rng := rand.New(rand.NewPCG(1, 1))
	n := min(s.Len(), LatencyDecisions)
	start := time.Now()
	for i := 0; i < n; i++ {
		p.Sample(s, i, rng, true)
	}
	return float64(time.Since(start).Microseconds()) / float64(max(1, n))
}
