package distill

// Distillation of a tiered allocation policy (env.TieredPackedPolicy).
// The teacher's cost is its LP: on Gavel's single-GPU protocol a solve
// builds about 1,250 columns (every job class alone on each GPU type, and
// every pair of classes sharing one), of which about 11 are positive at
// the optimum. The student keeps the teacher's tiers and parameters and
// solves the same LP over the columns the teacher used most on the
// training runs, in two bands of cluster load (env.ColumnSupport): the
// same decisions where the teacher keeps to them, at a fraction of the
// cost.

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
// and seeds, and for the evaluation the single-GPU protocol's
// largest-gap rates and 7.0 jobs/h, near capacity.
var (
	// DefaultSupportMaxLogLoad is the load past which a student leaves
	// its low-load support for its high-load one
	// (env.ColumnSupport.MaxLogLoad). On validation seeds 102-104, with
	// 40 alone and 40 pair columns above it: 0.25 keeps 102% and 99% of
	// the teacher's improvement at 6.2 and 7.0 jobs/h, 0.30 100% and
	// 93%, 0.35 96% and 78%. With the full LP above the limit instead,
	// 0.45 was needed to stay 10x faster at 6.2 jobs/h, and kept 54% at
	// 7.0.
	DefaultSupportMaxLogLoad = 0.25
	DefaultTieredTrainRates  = []float64{5.8, 6.4, 7.0}
	DefaultTieredTrainSeeds  = []uint64{100, 101}
	DefaultTieredEvalRates   = []float64{5.8, 6.0, 6.2, 7.0}
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
	// DefaultSupportHighPairs and DefaultSupportHighAlone are the
	// most-used pair and alone columns, at loads past the limit, of the
	// high-load support: of 30/30, 45/30, 56/25, 45/35, 50/35, 40/40,
	// 45/40 and all 56/40 (validation seeds 102-104, 45/20 below the
	// limit), the smallest that kept at least 97% of the improvement at
	// 7.0 jobs/h (98.6%; 45/35 kept 94%, 30/30 92%).
	DefaultSupportHighPairs = 40
	DefaultSupportHighAlone = 40
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
	// this load the student uses its high-load support (+Inf: never).
	MaxLogLoad float64
	// HighPairs and HighAlone are the high-load support's size: the
	// most-used columns of the teacher's solves past MaxLogLoad. With
	// HighFull, or when no training solve was past MaxLogLoad, the
	// student solves the full LP there instead.
	HighPairs, HighAlone int
	HighFull             bool
	// Price makes every band a priced support (env.ColumnSupport.Price):
	// the teacher's LP optimum, solved from the support outwards.
	Price bool
	// Scenario is the GPU scenario the teacher runs on (CLUSTER-WORKLOAD,
	// report.ParseGPUScenario); "" is Gavel's single-GPU protocol. A
	// support names GPU types, so a student is distilled on the cluster
	// it is for.
	Scenario string
	// Loads: TrainRates and EvalRates are offered loads (GPURunConfig's
	// Load), not jobs/h.
	Loads      bool
	TrainRates []float64 // jobs/h (or loads)
	TrainSeeds []uint64
	EvalRates  []float64
	EvalSeeds  []uint64 // empty: no evaluation
	Workers    int      // runs at once; 0 = GOMAXPROCS
}

// run is the GPU run of cfg's scenario at rate (or load) x and seed.
func (cfg *TieredConfig) run(x float64, seed uint64) report.GPURunConfig {
	r := report.GPURunConfig{Scenario: cfg.Scenario, Seed: seed}
	if r.Scenario == "" {
		r.Scenario = tieredScenario
	}
	if cfg.Loads {
		r.Load = x
	} else {
		r.Rate = x
	}
	return r
}

// TieredEval is one evaluation rate over the seeds: average JCT (hours)
// of the teacher, the student and the baseline, the share of the
// teacher's improvement over the baseline the student keeps, and the mean
// time of one allocation (the policy's Allocate, over every allocation of
// the runs; the runs share the machine, so compare the ratio).
type TieredEval struct {
	Rate            float64 `json:"rate_jobs_per_h,omitempty"`
	Load            float64 `json:"load,omitempty"` // with TieredConfig.Loads, in place of Rate
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
	Scenario      string       `json:"scenario"`
	TrainRates    []float64    `json:"train_rates,omitempty"` // jobs/h
	TrainLoads    []float64    `json:"train_loads,omitempty"` // with TieredConfig.Loads
	TrainSeeds    []uint64     `json:"train_seeds"`
	Solves        int          `json:"train_solves"`
	UsedColumns   float64      `json:"teacher_used_columns_per_solve"`
	Bands         []TieredBand `json:"bands"`
	EvalSeeds     []uint64     `json:"eval_seeds"`
	Eval          []TieredEval `json:"eval"`
}

// TieredBand is one load band of the student's support: the teacher's
// solves at those loads, the distinct alone and pair columns they used,
// those kept and the share of the band's column uses they cover. Full
// marks a band where the student solves the full LP.
type TieredBand struct {
	MaxLogLoad *float64 `json:"max_log_load,omitempty"` // absent: every load above the band below
	Full       bool     `json:"full_lp,omitempty"`
	Solves     int      `json:"train_solves"`
	AloneUsed  int      `json:"alone_columns_used"`
	PairsUsed  int      `json:"pair_columns_used"`
	AloneKept  int      `json:"alone_columns_kept"`
	PairsKept  int      `json:"pair_columns_kept"`
	Covered    float64  `json:"used_time_covered"`
}

// timedTiered is a tiered policy whose allocations are timed and whose
// used columns are counted (by GPU type name).
type timedTiered struct {
	*env.TieredPackedPolicy
	took time.Duration
	n    int
	// used counts, when not nil, the columns of the solves at loads up
	// to maxLoad ([0]) and past it ([1]); solves counts those solves.
	used    [2]map[env.SupportColumn]int
	maxLoad float64
	solves  [2]int
	table   *env.ThroughputTable
}

func (p *timedTiered) Allocate(s *env.RoundState, x []float64) error {
	t0 := time.Now()
	err := p.TieredPackedPolicy.Allocate(s, x)
	p.took += time.Since(t0)
	p.n++
	if err == nil && p.used[0] != nil {
		b := 0
		if env.LogLoad(s) > p.maxLoad {
			b = 1
		}
		p.solves[b]++
		for _, u := range p.Used() {
			c := env.SupportColumn{A: p.table.Models[u.A], GPU: s.Types[u.GPU]}
			if u.B >= 0 {
				a, b := p.table.Models[u.A], p.table.Models[u.B]
				c.A, c.B = min(a, b), max(a, b)
			}
			p.used[b][c]++
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
	case !(math.Abs(cfg.MaxLogLoad) <= 10 || math.IsInf(cfg.MaxLogLoad, 1)):
		return nil, fmt.Errorf("distill: the support's largest load %v: want a log load within ±10, or +Inf for no limit", cfg.MaxLogLoad)
	case cfg.Pairs < 0 || cfg.Alone < 0 || cfg.HighPairs < 0 || cfg.HighAlone < 0:
		return nil, fmt.Errorf("distill: support of %d pair and %d alone columns, %d and %d past the limit: want >= 0", cfg.Pairs, cfg.Alone, cfg.HighPairs, cfg.HighAlone)
	case len(cfg.TrainRates) == 0 || len(cfg.TrainSeeds) == 0:
		return nil, fmt.Errorf("distill: no training rates or seeds")
	case slices.ContainsFunc(append(slices.Clone(cfg.TrainRates), cfg.EvalRates...), func(x float64) bool { return !(x > 0 && x < math.Inf(1)) }):
		return nil, fmt.Errorf("distill: training and evaluation rates (or loads) %v, %v: want each > 0 and finite", cfg.TrainRates, cfg.EvalRates)
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
		Scenario: cfg.run(0, 0).Scenario, TrainRates: cfg.TrainRates, TrainSeeds: cfg.TrainSeeds, EvalSeeds: cfg.EvalSeeds, Eval: []TieredEval{}}
	if cfg.Loads {
		sum.TrainRates, sum.TrainLoads = nil, cfg.TrainRates
	}
	h := sha256.Sum256(data)
	sum.TeacherSHA256 = hex.EncodeToString(h[:])

	// The teacher's runs on the training rates and seeds, counting the
	// columns each solve uses, by load band.
	nt := len(cfg.TrainRates) * len(cfg.TrainSeeds)
	runs := make([]*timedTiered, nt)
	err = report.ForEach(ctx, nt, cfg.Workers, func(i int) error {
		p := &timedTiered{TieredPackedPolicy: teacher.Clone(), used: [2]map[env.SupportColumn]int{{}, {}}, maxLoad: cfg.MaxLogLoad, table: tab}
		runs[i] = p
		run := cfg.run(cfg.TrainRates[i/len(cfg.TrainSeeds)], cfg.TrainSeeds[i%len(cfg.TrainSeeds)])
		run.Policy, run.New = "teacher", func() env.AllocationPolicy { return p }
		_, err := report.RunGPU(run)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("distill: teacher runs: %w", err)
	}
	used := [2]map[env.SupportColumn]int{{}, {}}
	var solves [2]int
	for _, r := range runs {
		for b := range used {
			solves[b] += r.solves[b]
			for c, n := range r.used[b] {
				used[b][c] += n
				sum.UsedColumns += float64(n)
			}
		}
	}
	sum.Solves = solves[0] + solves[1]
	if sum.Solves > 0 {
		sum.UsedColumns /= float64(sum.Solves)
	}
	student, bands, err := supportStudent(tab, teacher, cfg, used, solves)
	if err != nil {
		return nil, err
	}
	sum.Bands = bands
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	record := map[string]any{"method": "distillation: the teacher's LP over its most-used columns", "teacher": cfg.Teacher,
		"teacher_sha256": sum.TeacherSHA256, "scenario": sum.Scenario, "train_rates": sum.TrainRates, "train_loads": sum.TrainLoads, "train_seeds": cfg.TrainSeeds,
		"bands": sum.Bands, "priced": cfg.Price}
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

// supportStudent is the teacher over a support of the columns it used
// most (used and solves: below cfg.MaxLogLoad, then past it), and the
// summary of each band.
func supportStudent(tab *env.ThroughputTable, teacher *env.TieredPackedPolicy, cfg TieredConfig, used [2]map[env.SupportColumn]int,
	solves [2]int) (*env.TieredPackedPolicy, []TieredBand, error) {
	student := teacher.Clone()
	sizes := [2][2]int{{cfg.Alone, cfg.Pairs}, {cfg.HighAlone, cfg.HighPairs}}
	var bands []TieredBand
	var prev *env.ColumnSupport
	for b := range used {
		band := TieredBand{Solves: solves[b]}
		for c := range used[b] {
			if c.B == "" {
				band.AloneUsed++
			} else {
				band.PairsUsed++
			}
		}
		// Past the limit with no training solve there, the teacher's runs
		// say nothing of the columns it needs: the full LP.
		if b == 1 && (cfg.HighFull || band.Solves == 0) {
			band.Full = true
			bands = append(bands, band)
			break
		}
		cols, covered := topColumns(used[b], sizes[b][0], sizes[b][1])
		for _, c := range cols {
			if c.B == "" {
				band.AloneKept++
			} else {
				band.PairsKept++
			}
		}
		band.Covered = covered
		sup, err := env.NewColumnSupport(tab, cols)
		if err != nil {
			return nil, nil, err
		}
		sup.Price = cfg.Price
		if b == 0 {
			student.Support = sup
			if !math.IsInf(cfg.MaxLogLoad, 1) {
				sup.MaxLogLoad = cfg.MaxLogLoad
				band.MaxLogLoad = &cfg.MaxLogLoad
			}
		} else {
			prev.Above = sup
		}
		prev = sup
		bands = append(bands, band)
		if math.IsInf(cfg.MaxLogLoad, 1) {
			break // one band: no load past the limit
		}
	}
	return student, bands, nil
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
		run := cfg.run(cfg.EvalRates[ri], cfg.EvalSeeds[si])
		run.Policy = TieredBaseline
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
			return fmt.Errorf("%s on %s at %v jobs/h (load %v) seed %d stopped at the bound", run.Policy, run.Scenario, run.Rate, run.Load, run.Seed)
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
		if cfg.Loads {
			e.Rate, e.Load = 0, rate
		}
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
	at := func(rate, load float64) string {
		if load > 0 {
			return fmt.Sprintf("load %.3g", load)
		}
		return fmt.Sprintf("%.3g jobs/h", rate)
	}
	train := fmt.Sprintf("%v jobs/h", s.TrainRates)
	if len(s.TrainLoads) > 0 {
		train = fmt.Sprintf("loads %v", s.TrainLoads)
	}
	fmt.Fprintf(w, "student %s: the teacher's LP over its most-used columns in %d solves on %s at %s, seeds %v (%.1f columns positive per solve)\n",
		s.Student, s.Solves, s.Scenario, train, s.TrainSeeds, s.UsedColumns)
	lo := "every load"
	for _, b := range s.Bands {
		at := lo
		if b.MaxLogLoad != nil {
			at = fmt.Sprintf("%s up to log load %.3g", lo, *b.MaxLogLoad)
			lo = fmt.Sprintf("past log load %.3g", *b.MaxLogLoad)
		}
		if b.Full {
			fmt.Fprintf(w, "  %s (%d solves): the full LP\n", at, b.Solves)
			continue
		}
		fmt.Fprintf(w, "  %s (%d solves): %d alone and %d pair columns of the %d and %d used (%.1f%% of the column uses)\n",
			at, b.Solves, b.AloneKept, b.PairsKept, b.AloneUsed, b.PairsUsed, 100*b.Covered)
	}
	for _, e := range s.Eval {
		fmt.Fprintf(w, "%s, seeds %v: teacher %.3f h, student %.3f h, %s %.3f h: %.0f%% of the improvement kept; one allocation %.0f µs against %.0f µs (%.1fx)\n",
			at(e.Rate, e.Load), s.EvalSeeds, e.TeacherJCT, e.StudentJCT, s.Baseline, e.BaselineJCT, 100*e.Kept, e.StudentAllocate, e.TeacherAllocate, e.Speedup)
	}
	return nil
}
