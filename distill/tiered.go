package distill

// Distillation of a tiered allocation policy (env.TieredPackedPolicy).
// The teacher's cost is its LP: on Gavel's single-GPU protocol a solve
// builds about 1,250 columns (every job class alone on each GPU type, and
// every pair of classes sharing one), of which about 11 are positive at
// the optimum. The student keeps the teacher's tiers and parameters and
// solves the same LP over the columns the teacher used most on the
// training runs (env.ColumnSupport): the same decisions where the teacher
// keeps to them, at a fraction of the cost.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// Defaults of a tiered distillation: the tiered preset's training rates
// and seeds, and the single-GPU protocol's largest-gap rates for the
// evaluation.
var (
	// DefaultSupportMaxLogLoad is the load past which a student solves the
	// full LP (env.ColumnSupport.MaxLogLoad). Of no limit, 0.45, 0.35,
	// 0.25 and 0.15 (validation seeds 102-104, 20 pairs and 45 alone
	// columns), 0.45 is the lowest that keeps the student 10x faster at
	// 6.2 jobs/h (11.2x, 99% of the improvement kept); without a limit it
	// falls behind max_min_fairness_packed at 7.0 jobs/h (26.29 against
	// 24.69 h), with 0.45 it stays ahead (23.98 h, 54% of the teacher's
	// improvement kept); 0.35 keeps 91% there but is 8.2x at 6.2 jobs/h.
	DefaultSupportMaxLogLoad = 0.45
	DefaultTieredTrainRates  = []float64{5.8, 6.4, 7.0}
	DefaultTieredTrainSeeds  = []uint64{100, 101}
	DefaultTieredEvalRates   = []float64{5.8, 6.0, 6.2}
)

const (
	// DefaultSupportPairs and DefaultSupportAlone are the most-used pair
	// and alone columns a student keeps: the smallest support tried (20
	// or 15 and 25 pairs; 50, 45 or 40 alone) that kept at least 99% of
	// the teacher's improvement over max_min_fairness_packed at 5.8, 6.0
	// and 6.2 jobs/h on validation seeds 102-104 (99-105%; 40 alone
	// columns kept 96-98%, 15 pairs 93-99%).
	DefaultSupportPairs = 20
	DefaultSupportAlone = 45
	// TieredBaseline is the best baseline the improvement is measured
	// against on the single-GPU protocol.
	TieredBaseline = "max_min_fairness_packed"
	tieredScenario = "gavel-single"
)

// TieredConfig is a distillation of a tiered policy file.
type TieredConfig struct {
	Teacher string // a tiered policy file
	Out     string // the folder for policy.json and summary.json
	// Pairs and Alone are the support's size: the most-used pair and
	// alone columns of the teacher's training runs.
	Pairs, Alone int
	// MaxLogLoad is the support's env.ColumnSupport.MaxLogLoad: past
	// this load the student solves the full LP (+Inf: never).
	MaxLogLoad float64
	TrainRates []float64 // jobs/h on the Gavel cluster, single-GPU jobs
	TrainSeeds []uint64
	EvalRates  []float64
	EvalSeeds  []uint64 // empty: no evaluation
	Workers    int      // runs at once; 0 = GOMAXPROCS
}

// TieredEval is one evaluation rate over the seeds: average JCT (hours)
// of the teacher, the student and the baseline, the share of the
// teacher's improvement over the baseline the student keeps, and the mean
// time of one allocation (the policy's Allocate, over every allocation of
// the runs; the runs share the machine, so compare the ratio).
type TieredEval struct {
	Rate            float64 `json:"rate_jobs_per_h"`
	TeacherJCT      float64 `json:"teacher_avg_jct_h"`
	StudentJCT      float64 `json:"student_avg_jct_h"`
	BaselineJCT     float64 `json:"baseline_avg_jct_h"`
	Kept            float64 `json:"improvement_kept"`
	TeacherAllocate float64 `json:"teacher_allocate_us"`
	StudentAllocate float64 `json:"student_allocate_us"`
	Speedup         float64 `json:"speedup"`
}

// TieredSummary is a tiered distillation's summary.json.
type TieredSummary struct {
	Teacher       string       `json:"teacher"`
	TeacherSHA256 string       `json:"teacher_sha256"`
	Student       string       `json:"student"`
	Baseline      string       `json:"baseline"`
	TrainRates    []float64    `json:"train_rates"`
	TrainSeeds    []uint64     `json:"train_seeds"`
	Solves        int          `json:"train_solves"`
	UsedColumns   float64      `json:"teacher_used_columns_per_solve"`
	AloneUsed     int          `json:"alone_columns_used"`
	PairsUsed     int          `json:"pair_columns_used"`
	AloneKept     int          `json:"alone_columns_kept"`
	PairsKept     int          `json:"pair_columns_kept"`
	Covered       float64      `json:"used_time_covered"`
	EvalSeeds     []uint64     `json:"eval_seeds"`
	Eval          []TieredEval `json:"eval"`
}

// timedTiered is a tiered policy whose allocations are timed and whose
// used columns are counted (by GPU type name).
type timedTiered struct {
	*env.TieredPackedPolicy
	took   time.Duration
	n      int
	used   map[env.SupportColumn]int
	table  *env.ThroughputTable
	solves int
}

func (p *timedTiered) Allocate(s *env.RoundState, x []float64) error {
	t0 := time.Now()
	err := p.TieredPackedPolicy.Allocate(s, x)
	p.took += time.Since(t0)
	p.n++
	if err == nil && p.used != nil {
		p.solves++
		for _, u := range p.Used() {
			c := env.SupportColumn{A: p.table.Models[u.A], GPU: s.Types[u.GPU]}
			if u.B >= 0 {
				a, b := p.table.Models[u.A], p.table.Models[u.B]
				c.A, c.B = min(a, b), max(a, b)
			}
			p.used[c]++
		}
	}
	return err
}

// RunTiered distils cfg.Teacher: it runs the teacher on the training
// rates and seeds, keeps its most-used columns, writes the student to
// cfg.Out/policy.json and, with evaluation seeds, compares the two and
// the baseline on them. The result depends only on cfg.
func RunTiered(ctx context.Context, cfg TieredConfig) (*TieredSummary, error) {
	switch {
	case cfg.Teacher == "" || cfg.Out == "":
		return nil, fmt.Errorf("distill: a teacher and an output folder are needed")
	case math.IsNaN(cfg.MaxLogLoad):
		return nil, fmt.Errorf("distill: the support's largest load is not a number")
	case cfg.Pairs < 0 || cfg.Alone < 0:
		return nil, fmt.Errorf("distill: support of %d pair and %d alone columns: want >= 0", cfg.Pairs, cfg.Alone)
	case len(cfg.TrainRates) == 0 || len(cfg.TrainSeeds) == 0:
		return nil, fmt.Errorf("distill: no training rates or seeds")
	}
	data, err := os.ReadFile(cfg.Teacher)
	if err != nil {
		return nil, fmt.Errorf("distill: %w", err)
	}
	teacher, err := env.ParseTieredPolicy(data)
	if err != nil {
		return nil, fmt.Errorf("distill %s: %w", cfg.Teacher, err)
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, err
	}
	sum := &TieredSummary{Teacher: cfg.Teacher, Student: filepath.Join(cfg.Out, "policy.json"), Baseline: TieredBaseline,
		TrainRates: cfg.TrainRates, TrainSeeds: cfg.TrainSeeds, EvalSeeds: cfg.EvalSeeds, Eval: []TieredEval{}}
	h := sha256.Sum256(data)
	sum.TeacherSHA256 = hex.EncodeToString(h[:])

	// The teacher's runs on the training rates and seeds, counting the
	// columns each solve uses.
	nt := len(cfg.TrainRates) * len(cfg.TrainSeeds)
	runs := make([]*timedTiered, nt)
	err = report.ForEach(ctx, nt, cfg.Workers, func(i int) error {
		p := &timedTiered{TieredPackedPolicy: teacher.Clone(), used: map[env.SupportColumn]int{}, table: tab}
		runs[i] = p
		_, err := report.RunGPU(report.GPURunConfig{Scenario: tieredScenario, Rate: cfg.TrainRates[i/len(cfg.TrainSeeds)],
			Seed: cfg.TrainSeeds[i%len(cfg.TrainSeeds)], Policy: "teacher", New: func() env.AllocationPolicy { return p }})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("distill: teacher runs: %w", err)
	}
	used := map[env.SupportColumn]int{}
	for _, r := range runs {
		sum.Solves += r.solves
		for c, n := range r.used {
			used[c] += n
			sum.UsedColumns += float64(n)
		}
	}
	if sum.Solves > 0 {
		sum.UsedColumns /= float64(sum.Solves)
	}
	support, covered := topColumns(used, cfg.Alone, cfg.Pairs)
	for _, c := range support {
		if c.B == "" {
			sum.AloneKept++
		} else {
			sum.PairsKept++
		}
	}
	for c := range used {
		if c.B == "" {
			sum.AloneUsed++
		} else {
			sum.PairsUsed++
		}
	}
	sum.Covered = covered
	student := teacher.Clone()
	if student.Support, err = env.NewColumnSupport(tab, support); err != nil {
		return nil, err
	}
	student.Support.MaxLogLoad = cfg.MaxLogLoad
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	record := map[string]any{"method": "distillation: the teacher's LP over its most-used columns", "teacher": cfg.Teacher,
		"teacher_sha256": sum.TeacherSHA256, "train_rates": cfg.TrainRates, "train_seeds": cfg.TrainSeeds,
		"alone_columns_kept": sum.AloneKept, "pair_columns_kept": sum.PairsKept, "used_time_covered": covered}
	if err := env.WriteTieredPolicy(sum.Student, student, record); err != nil {
		return nil, err
	}
	if len(cfg.EvalSeeds) > 0 {
		if sum.Eval, err = evalTiered(ctx, cfg, teacher, student); err != nil {
			return nil, err
		}
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return nil, err
	}
	return sum, os.WriteFile(filepath.Join(cfg.Out, "summary.json"), append(b, '\n'), 0o644)
}

// topColumns keeps the alone and pair columns used in the most solves
// (ties by name), and the share of all uses they cover.
func topColumns(used map[env.SupportColumn]int, alone, pairs int) ([]env.SupportColumn, float64) {
	var a, p []env.SupportColumn
	total := 0
	for c, n := range used {
		total += n
		if c.B == "" {
			a = append(a, c)
		} else {
			p = append(p, c)
		}
	}
	byUse := func(x, y env.SupportColumn) int {
		if c := cmp.Compare(used[y], used[x]); c != 0 {
			return c
		}
		return cmp.Compare(x.A+"\x00"+x.B+"\x00"+x.GPU, y.A+"\x00"+y.B+"\x00"+y.GPU)
	}
	slices.SortFunc(a, byUse)
	slices.SortFunc(p, byUse)
	out := append(a[:min(alone, len(a))], p[:min(pairs, len(p))]...)
	kept := 0
	for _, c := range out {
		kept += used[c]
	}
	if total == 0 {
		return out, 0
	}
	return out, float64(kept) / float64(total)
}

// evalTiered runs the teacher, the student and the baseline on every
// evaluation rate and seed.
func evalTiered(ctx context.Context, cfg TieredConfig, teacher, student *env.TieredPackedPolicy) ([]TieredEval, error) {
	ns, nr := len(cfg.EvalSeeds), len(cfg.EvalRates)
	type out struct {
		jct  float64
		took time.Duration
		n    int
	}
	res := make([]out, 3*nr*ns) // (policy, rate, seed)
	err := report.ForEach(ctx, len(res), cfg.Workers, func(k int) error {
		pi, ri, si := k/(nr*ns), k/ns%nr, k%ns
		run := report.GPURunConfig{Scenario: tieredScenario, Rate: cfg.EvalRates[ri], Seed: cfg.EvalSeeds[si], Policy: TieredBaseline}
		var p *timedTiered
		if pi < 2 {
			p = &timedTiered{TieredPackedPolicy: []*env.TieredPackedPolicy{teacher, student}[pi].Clone()}
			run.Policy, run.New = []string{"teacher", "student"}[pi], func() env.AllocationPolicy { return p }
		}
		m, err := report.RunGPU(run)
		if err != nil {
			return err
		}
		if m.AvgJCT == nil {
			return fmt.Errorf("%s at %v jobs/h seed %d stopped at the bound", run.Policy, run.Rate, run.Seed)
		}
		res[k].jct = *m.AvgJCT
		if p != nil {
			res[k].took, res[k].n = p.took, p.n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("distill: evaluation: %w", err)
	}
	var evals []TieredEval
	for ri, rate := range cfg.EvalRates {
		e := TieredEval{Rate: rate}
		var took [2]time.Duration
		var n [2]int
		for si := range ns {
			for pi, jct := range []*float64{&e.TeacherJCT, &e.StudentJCT, &e.BaselineJCT} {
				r := res[(pi*nr+ri)*ns+si]
				*jct += r.jct / float64(ns)
				if pi < 2 {
					took[pi] += r.took
					n[pi] += r.n
				}
			}
		}
		if gain := e.BaselineJCT - e.TeacherJCT; gain != 0 {
			e.Kept = (e.BaselineJCT - e.StudentJCT) / gain
		}
		e.TeacherAllocate = float64(took[0].Microseconds()) / float64(max(n[0], 1))
		e.StudentAllocate = float64(took[1].Microseconds()) / float64(max(n[1], 1))
		if e.StudentAllocate > 0 {
			e.Speedup = e.TeacherAllocate / e.StudentAllocate
		}
		evals = append(evals, e)
	}
	return evals, nil
}

// WriteTieredSummary prints a tiered distillation's summary for people.
func WriteTieredSummary(w io.Writer, s *TieredSummary) error {
	fmt.Fprintf(w, "student %s: the teacher's LP over %d alone and %d pair columns of the %d and %d it used (%.1f%% of its column uses) in %d solves on %v jobs/h, seeds %v; %.1f columns positive per solve\n",
		s.Student, s.AloneKept, s.PairsKept, s.AloneUsed, s.PairsUsed, 100*s.Covered, s.Solves, s.TrainRates, s.TrainSeeds, s.UsedColumns)
	for _, e := range s.Eval {
		fmt.Fprintf(w, "%.3g jobs/h, seeds %v: teacher %.3f h, student %.3f h, %s %.3f h: %.0f%% of the improvement kept; one allocation %.0f µs against %.0f µs (%.1fx)\n",
			e.Rate, s.EvalSeeds, e.TeacherJCT, e.StudentJCT, s.Baseline, e.BaselineJCT, 100*e.Kept, e.StudentAllocate, e.TeacherAllocate, e.Speedup)
	}
	return nil
}
