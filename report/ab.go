package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
)

// Direction says which way a metric is better.
type Direction int8

// Directions of metrics.
const (
	Neutral      Direction = 0  // a count or setting, neither better nor worse
	LowerBetter  Direction = -1 // slowdown, JCT, wait, violations, energy...
	HigherBetter Direction = 1  // utilisation, reward, completed jobs
)

func (d Direction) String() string {
	switch d {
	case LowerBetter:
		return "lower"
	case HigherBetter:
		return "higher"
	}
	return "neutral"
}

// MarshalText writes the direction as lower, higher or neutral.
func (d Direction) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// metricDirections is the one table of which way each numeric field of
// env.Metrics (by JSON key) is better. A test checks that it names every
// numeric key and nothing else, so a new metric needs a line here.
var metricDirections = map[string]Direction{
	// Setup and bookkeeping: the same for both, or not a quality.
	"machines": Neutral, "gpus": Neutral, "sim_time_s": Neutral, "ticks": Neutral,
	"jobs_submitted": Neutral, "jobs_running": Neutral, "jobs_cancelled": Neutral,
	"machine_failures": Neutral, // drawn from the seed, not the scheduler
	"migrations":       Neutral, "safety_actions": Neutral, "admission_taxed": Neutral,
	"mean_damping": Neutral, "token_supply": Neutral, "token_supply_bound": Neutral,
	"replicas_added": Neutral, "replicas_removed": Neutral,

	"jobs_completed": HigherBetter,
	"util_cpu":       HigherBetter, "util_mem": HigherBetter, "util_gpu": HigherBetter,
	"reward_mean": HigherBetter, "reward_success": HigherBetter, "reward_energy": HigherBetter, "reward_latency": HigherBetter,

	"jobs_failed": LowerBetter, "jobs_rejected": LowerBetter, "jobs_queued": LowerBetter,
	"mean_jct_s": LowerBetter, "p95_jct_s": LowerBetter, "mean_slowdown": LowerBetter,
	"mean_wait_s": LowerBetter, "p95_wait_s": LowerBetter, "mean_queue_len": LowerBetter,
	"sla_violation_rate": LowerBetter, "gpu_frag_rate": LowerBetter, "gpu_frag_ratio": LowerBetter,
	"energy_kwh": LowerBetter, "starved_jobs": LowerBetter, "evictions": LowerBetter,
	"invalid_decisions": LowerBetter, "oom_kills": LowerBetter, "safety_violations": LowerBetter,
	"preemptions": LowerBetter, "nash_gap": LowerBetter, "nash_gap_mean": LowerBetter,
}

// MetricDirection returns which way the metric with JSON key name is
// better (Neutral for names it does not know).
func MetricDirection(name string) Direction { return metricDirections[name] }

// metricField is one numeric field of env.Metrics.
type metricField struct {
	key   string
	index int
}

// metricFields lists the numeric fields of env.Metrics in declaration
// order, but the seed, which identifies a run rather than measuring it.
var metricFields = func() []metricField {
	var out []metricField
	t := reflect.TypeFor[env.Metrics]()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" || key == "seed" {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			out = append(out, metricField{key, i})
		}
	}
	return out
}()

// MetricNames returns the JSON keys of the numeric metrics an A/B report
// compares, in env.Metrics order.
func MetricNames() []string {
	out := make([]string, len(metricFields))
	for i, f := range metricFields {
		out[i] = f.key
	}
	return out
}

// metricValues returns m's numeric metrics in metricFields order.
func metricValues(m *env.Metrics) []float64 {
	v := reflect.ValueOf(m).Elem()
	out := make([]float64, len(metricFields))
	for i, f := range metricFields {
		x := v.Field(f.index)
		switch {
		case x.CanInt():
			out[i] = float64(x.Int())
		case x.CanUint():
			out[i] = float64(x.Uint())
		default:
			out[i] = x.Float()
		}
	}
	return out
}

// Verdicts of a comparison.
const (
	VerdictBBetter = "B better"
	VerdictABetter = "A better"
	VerdictNone    = "no significant difference"
	VerdictBHigher = "B higher" // neutral metrics
	VerdictBLower  = "B lower"
	VerdictFew     = "too few seeds" // fewer than MinVerdictSeeds
)

// MinVerdictSeeds is the fewest paired seeds on which a comparison at
// confidence level gives a verdict: the n at which the sign test can reach
// it at all (B ahead on every seed has two-sided p = 2·0.5^n, so n >= 6 at
// 0.95). With fewer, a percentile bootstrap of the mean still returns an
// interval, often one that excludes zero, but it rests on the few
// resamples that n values allow (3 distinct means for n = 2), not on
// evidence.
func MinVerdictSeeds(level float64) int {
	if !(level > 0 && level < 1) {
		return 2
	}
	return max(2, int(math.Ceil(math.Log2(2/(1-level))-1e-9)))
}

// Verdict judges a metric from the confidence interval [lo, hi] at level
// of the paired difference B - A over n seeds: an interval wholly above or
// below zero is a significant difference, better or worse by the metric's
// direction. Fewer than MinVerdictSeeds(level) seeds (or a NaN interval)
// give no verdict.
func Verdict(dir Direction, lo, hi float64, n int, level float64) string {
	if n < MinVerdictSeeds(level) {
		return VerdictFew
	}
	var sign int
	switch {
	case lo > 0:
		sign = 1
	case hi < 0:
		sign = -1
	default:
		return VerdictNone
	}
	switch int(dir) * sign {
	case 1:
		return VerdictBBetter
	case -1:
		return VerdictABetter
	}
	if sign > 0 {
		return VerdictBHigher
	}
	return VerdictBLower
}

// Contender is one scheduler of a comparison: its name in reports and a
// constructor of fresh instances (one per run: schedulers keep per-run
// caches).
type Contender struct {
	Name string
	New  func() env.Scheduler
}

// DefaultABSeriesEvery is the sampling interval, in ticks, of A's and B's
// time series (one minute of 10 s ticks).
const DefaultABSeriesEvery = 6

// DefaultLevel is the confidence level of A/B intervals.
const DefaultLevel = 0.95

// ABConfig is a paired comparison of B against A: both run on the same
// cluster and, for each seed, the same workload and simulation seed.
type ABConfig struct {
	Cluster *env.Cluster
	// ClusterName describes the cluster in the report (e.g. the --cluster
	// flag).
	ClusterName string
	Workload    func(seed uint64) (*env.Workload, error) // one per seed
	A, B        Contender
	// Reference schedulers are run on the same seeds and reported as means
	// only; one named like A or B reuses its runs.
	Reference []Contender
	Seeds     []uint64
	// Sim is the configuration of every run; Seed is set per run and, for A
	// and B, Series.
	Sim env.SimConfig
	// TEG, when set, gives the TEG configuration of a scheduler's runs (nil:
	// its governor, as Sim.TEG nil does).
	TEG func(env.Scheduler) (env.TEGConfig, error)
	// SeriesEvery is the sampling interval of A's and B's time series in
	// ticks (0: DefaultABSeriesEvery).
	SeriesEvery   int
	Resamples     int     // bootstrap resamples (0: DefaultResamples)
	Level         float64 // confidence level (0: DefaultLevel)
	BootstrapSeed uint64
	Workers       int    // runs at once (<= 0: GOMAXPROCS)
	OnRun         func() // called after each run (progress); from several goroutines
}

// ABRun is one run of A or B: its metrics and what it recorded.
type ABRun struct {
	Metrics env.Metrics
	Series  *env.Series
}

// ABMetric compares one metric over the seeds. The interval is of the
// mean paired difference B - A.
type ABMetric struct {
	AMean     float64   `json:"a_mean"`
	BMean     float64   `json:"b_mean"`
	DiffMean  float64   `json:"diff_mean"`
	CILow     float64   `json:"ci_low"`
	CIHigh    float64   `json:"ci_high"`
	Direction Direction `json:"direction"`
	Verdict   string    `json:"verdict"`
}

// ABReference is a reference scheduler's mean metrics over the seeds.
type ABReference struct {
	Scheduler string             `json:"scheduler"`
	Metrics   map[string]float64 `json:"metrics"`
}

// ABSetup describes what was compared.
type ABSetup struct {
	Cluster          string  `json:"cluster"`
	Machines         int     `json:"machines"`
	GPUs             int     `json:"gpus"`
	Workload         string  `json:"workload"`
	JobsPerSeedMean  float64 `json:"jobs_per_seed_mean"`
	DurationS        float64 `json:"duration_s"` // 0: until the workload drains
	TickS            float64 `json:"tick_s"`
	SeriesEveryTicks int     `json:"series_every_ticks"`
	Resamples        int     `json:"resamples"`
	ConfidenceLevel  float64 `json:"confidence_level"`
	BootstrapSeed    uint64  `json:"bootstrap_seed"`
}

// ABReport is the result of a comparison; its JSON form is tegrl ab's
// report.json and --json output. Keys are stable: add, never rename.
type ABReport struct {
	A         string              `json:"a"`
	B         string              `json:"b"`
	Seeds     []uint64            `json:"seeds"`
	Metrics   map[string]ABMetric `json:"metrics"`
	Reference []ABReference       `json:"reference"`
	Setup     ABSetup             `json:"setup"`
}

// ABResult is a comparison: the report and the runs it was computed from
// (per seed, in ascending seed order).
type ABResult struct {
	Report    ABReport
	A, B      []ABRun
	Reference [][]env.Metrics // [reference][seed]
}

func (cfg *ABConfig) fill() error {
	switch {
	case cfg.Cluster == nil || cfg.Workload == nil:
		return fmt.Errorf("need a cluster and a workload")
	case cfg.A.New == nil || cfg.B.New == nil || cfg.A.Name == "" || cfg.B.Name == "":
		return fmt.Errorf("need schedulers A and B")
	case len(cfg.Seeds) == 0:
		return fmt.Errorf("need at least one seed")
	case cfg.SeriesEvery < 0 || cfg.Resamples < 0:
		return fmt.Errorf("series every %d ticks, %d resamples: want >= 0", cfg.SeriesEvery, cfg.Resamples)
	case cfg.Level != 0 && !(cfg.Level > 0 && cfg.Level < 1):
		return fmt.Errorf("confidence level %v: want a number in (0, 1)", cfg.Level)
	}
	for _, r := range cfg.Reference {
		if r.New == nil || r.Name == "" {
			return fmt.Errorf("reference scheduler %q has no constructor", r.Name)
		}
	}
	setDefault(&cfg.SeriesEvery, DefaultABSeriesEvery)
	setDefault(&cfg.Resamples, DefaultResamples)
	setDefault(&cfg.Level, DefaultLevel)
	cfg.Seeds = slices.Clone(cfg.Seeds)
	slices.Sort(cfg.Seeds)
	for i := 1; i < len(cfg.Seeds); i++ {
		if cfg.Seeds[i] == cfg.Seeds[i-1] {
			return fmt.Errorf("seed %d named twice", cfg.Seeds[i])
		}
	}
	return nil
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// RunAB runs A, B and the reference schedulers on every seed, in parallel
// over cfg.Workers, and compares B with A. Runs are deterministic and land
// in their own slots, so the result does not depend on Workers.
func RunAB(ctx context.Context, cfg ABConfig) (*ABResult, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("ab: %w", err)
	}
	n := len(cfg.Seeds)
	workloads := make([]*env.Workload, n)
	err := ForEach(ctx, n, cfg.Workers, func(k int) error {
		w, err := cfg.Workload(cfg.Seeds[k])
		if err != nil {
			return fmt.Errorf("ab: workload of seed %d: %w", cfg.Seeds[k], err)
		}
		workloads[k] = w
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Contenders 0 and 1 are A and B (with series); then each reference
	// not named like them.
	contenders := []Contender{cfg.A, cfg.B}
	refSlot := make([]int, len(cfg.Reference))
	for i, r := range cfg.Reference {
		refSlot[i] = slices.IndexFunc(contenders, func(c Contender) bool { return c.Name == r.Name })
		if refSlot[i] < 0 {
			refSlot[i] = len(contenders)
			contenders = append(contenders, r)
		}
	}
	runs := make([][]ABRun, len(contenders))
	for i := range runs {
		runs[i] = make([]ABRun, n)
	}
	err = ForEach(ctx, len(contenders)*n, cfg.Workers, func(k int) error {
		ci, si := k/n, k%n
		sc := cfg.Sim
		sc.Seed = cfg.Seeds[si]
		if ci < 2 {
			sc.Series = env.SeriesConfig{Every: cfg.SeriesEvery}
		}
		sched := contenders[ci].New()
		if cfg.TEG != nil {
			t, err := cfg.TEG(sched)
			if err != nil {
				return fmt.Errorf("ab: %s: %w", contenders[ci].Name, err)
			}
			sc.TEG = &t
		}
		sim, err := env.NewSim(cfg.Cluster, workloads[si], sched, sc)
		if err != nil {
			return fmt.Errorf("ab: %s seed %d: %w", contenders[ci].Name, sc.Seed, err)
		}
		runs[ci][si] = ABRun{Metrics: sim.Run(), Series: sim.Series()}
		if cfg.OnRun != nil {
			cfg.OnRun()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	res := &ABResult{A: runs[0], B: runs[1], Reference: make([][]env.Metrics, len(cfg.Reference))}
	for i, slot := range refSlot {
		res.Reference[i] = make([]env.Metrics, n)
		for si := range n {
			res.Reference[i][si] = runs[slot][si].Metrics
		}
	}
	jobs := 0.0
	for _, w := range workloads {
		jobs += float64(len(w.Jobs))
	}
	tick := cfg.Sim.Tick
	if tick == 0 {
		tick = env.DefaultSimConfig.Tick
	}
	setup := ABSetup{
		Cluster: cfg.ClusterName, Machines: len(cfg.Cluster.Machines), GPUs: cfg.Cluster.TotalGPUs(),
		Workload: workloads[0].Name, JobsPerSeedMean: jobs / float64(n), DurationS: cfg.Sim.Duration, TickS: tick,
		SeriesEveryTicks: cfg.SeriesEvery, Resamples: cfg.Resamples, ConfidenceLevel: cfg.Level, BootstrapSeed: cfg.BootstrapSeed,
	}
	names := make([]string, len(cfg.Reference))
	for i, r := range cfg.Reference {
		names[i] = r.Name
	}
	res.Report, err = Compare(cfg.A.Name, cfg.B.Name, cfg.Seeds, metricsOf(res.A), metricsOf(res.B), names, res.Reference, setup)
	if err != nil {
		return nil, err
	}
	return res, nil
}

func metricsOf(runs []ABRun) []env.Metrics {
	out := make([]env.Metrics, len(runs))
	for i, r := range runs {
		out[i] = r.Metrics
	}
	return out
}

// Compare builds the report of a paired comparison from per-seed metrics
// (a[k] and b[k] ran on seeds[k]) and the reference schedulers' runs
// (refs[i][k] of refNames[i] on seeds[k]); setup supplies the bootstrap's
// resamples, level and seed.
func Compare(aName, bName string, seeds []uint64, a, b []env.Metrics, refNames []string, refs [][]env.Metrics, setup ABSetup) (ABReport, error) {
	n := len(seeds)
	if n == 0 || len(a) != n || len(b) != n || len(refs) != len(refNames) {
		return ABReport{}, fmt.Errorf("ab compare: %d seeds, %d runs of A, %d of B, %d reference names for %d references", n, len(a), len(b), len(refNames), len(refs))
	}
	rep := ABReport{A: aName, B: bName, Seeds: slices.Clone(seeds), Metrics: map[string]ABMetric{}, Reference: []ABReference{}, Setup: setup}
	av, bv := make([][]float64, n), make([][]float64, n)
	for k := range n {
		av[k], bv[k] = metricValues(&a[k]), metricValues(&b[k])
	}
	xa, xb, d := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, f := range metricFields {
		for k := range n {
			xa[k], xb[k] = av[k][i], bv[k][i]
			d[k] = xb[k] - xa[k]
		}
		lo, hi, err := BootstrapMeanCI(d, setup.Resamples, setup.ConfidenceLevel, setup.BootstrapSeed)
		if err != nil {
			return ABReport{}, fmt.Errorf("ab compare %s: %w", f.key, err)
		}
		dir := metricDirections[f.key]
		rep.Metrics[f.key] = ABMetric{AMean: mean(xa), BMean: mean(xb), DiffMean: mean(d), CILow: lo, CIHigh: hi,
			Direction: dir, Verdict: Verdict(dir, lo, hi, n, setup.ConfidenceLevel)}
	}
	for i, runs := range refs {
		if len(runs) != n {
			return ABReport{}, fmt.Errorf("ab compare: reference %s has %d runs for %d seeds", refNames[i], len(runs), n)
		}
		r := ABReference{Scheduler: refNames[i], Metrics: map[string]float64{}}
		for k := range n {
			av[k] = metricValues(&runs[k])
		}
		for j, f := range metricFields {
			for k := range n {
				xa[k] = av[k][j]
			}
			r.Metrics[f.key] = mean(xa)
		}
		rep.Reference = append(rep.Reference, r)
	}
	return rep, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// WriteABJSON writes the report as one JSON object on one line (keys of
// maps sorted, so the same report gives the same bytes).
func WriteABJSON(w io.Writer, rep *ABReport) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("ab report JSON: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// FormatNumber formats a metric value for people: whole numbers as such, others
// above 1000 with one decimal, three decimals from 1, four significant
// digits below.
func FormatNumber(v float64) string {
	switch a := math.Abs(v); {
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// abMetricOrder lists the metrics of either kind of report in table
// order: env.Metrics's, then the GPU scenarios'.
func abMetricOrder() []string {
	out := MetricNames()
	for _, f := range gpuABMetrics {
		out = append(out, f.key)
	}
	return out
}

// abRows returns the per-metric table: a header row, then one row per
// metric in abMetricOrder.
func abRows(rep *ABReport) [][]string {
	level := fmt.Sprintf("%g%% CI of B - A", 100*rep.Setup.ConfidenceLevel)
	rows := [][]string{{"metric", "better", "A mean", "B mean", "B - A", level, "verdict"}}
	for _, key := range abMetricOrder() {
		m, ok := rep.Metrics[key]
		if !ok {
			continue
		}
		rows = append(rows, []string{key, m.Direction.String(), FormatNumber(m.AMean), FormatNumber(m.BMean), FormatNumber(m.DiffMean),
			"[" + FormatNumber(m.CILow) + ", " + FormatNumber(m.CIHigh) + "]", m.Verdict})
	}
	return rows
}

// WriteABText writes the per-metric comparison as an aligned text table.
func WriteABText(w io.Writer, rep *ABReport) error {
	fmt.Fprintf(w, "A = %s, B = %s, seeds %s (n=%d), %d bootstrap resamples\n", rep.A, rep.B, FormatSeeds(rep.Seeds), len(rep.Seeds), rep.Setup.Resamples)
	if m := MinVerdictSeeds(rep.Setup.ConfidenceLevel); len(rep.Seeds) < m {
		fmt.Fprintf(w, "no verdicts: %d seeds, a verdict at this confidence needs %d or more (--seeds)\n", len(rep.Seeds), m)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, row := range abRows(rep) {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	if len(rep.Reference) > 0 {
		fmt.Fprintf(tw, "\nreference schedulers: means over the seeds (A and B: the paired ones)\t\n")
		for _, row := range abRefRows(rep) {
			fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
		}
	}
	return tw.Flush()
}

// abRefRows is the reference table: a header, then A, B and each
// reference scheduler's means; "-" where a scheduler has no value (a GPU
// policy that stopped at the bound on every seed has no JCT).
func abRefRows(rep *ABReport) [][]string {
	cols := abRefColumns
	if _, machine := rep.Metrics["jobs_completed"]; !machine {
		cols = gpuABRefColumns
	}
	rows := [][]string{append([]string{"scheduler"}, cols...)}
	add := func(name string, get func(string) (float64, bool)) {
		row := []string{name}
		for _, k := range cols {
			cell := "-"
			if v, ok := get(k); ok {
				cell = FormatNumber(v)
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	add("A: "+rep.A, func(k string) (float64, bool) { m, ok := rep.Metrics[k]; return m.AMean, ok })
	add("B: "+rep.B, func(k string) (float64, bool) { m, ok := rep.Metrics[k]; return m.BMean, ok })
	for _, r := range rep.Reference {
		add(r.Scheduler, func(k string) (float64, bool) { v, ok := r.Metrics[k]; return v, ok })
	}
	return rows
}

// abRefColumns are the reference table's metrics of a machine-level
// report.
var abRefColumns = []string{"jobs_completed", "mean_jct_s", "p95_jct_s", "mean_slowdown", "mean_wait_s",
	"sla_violation_rate", "util_cpu", "util_gpu", "gpu_frag_rate", "energy_kwh", "oom_kills", "reward_mean"}

// gpuABRefColumns are the reference table's metrics of a GPU scenario.
var gpuABRefColumns = []string{"avg_jct_h", "p99_jct_h", "max_jct_h", "utilisation", "at_bound"}

// ABPlot is an image of the report: a file name relative to the Markdown
// file and what it shows.
type ABPlot struct {
	File, Title string
}

// WriteABMarkdown writes the report for people: the command line, the
// setup, the per-metric table, the reference schedulers and the plots.
func WriteABMarkdown(w io.Writer, rep *ABReport, commandLine string, plots []ABPlot) error {
	var b strings.Builder
	s := &rep.Setup
	fmt.Fprintf(&b, "# A/B: %s (B) against %s (A)\n\n", rep.B, rep.A)
	fmt.Fprintf(&b, "Command:\n\n```sh\n%s\n```\n\n", commandLine)
	b.WriteString("## Setup\n\n")
	dur := "until the workload drains"
	if s.DurationS > 0 {
		dur = fmt.Sprintf("%g s simulated", s.DurationS)
	}
	fmt.Fprintf(&b, "- cluster: %s (%d machines, %d GPUs)\n", s.Cluster, s.Machines, s.GPUs)
	fmt.Fprintf(&b, "- workload: %s, %.1f jobs per seed on average\n", s.Workload, s.JobsPerSeedMean)
	fmt.Fprintf(&b, "- run: %s, %g s ticks; time series sampled every %d ticks\n", dur, s.TickS, s.SeriesEveryTicks)
	fmt.Fprintf(&b, "- seeds: %s (n=%d); A and B run on the same cluster, workload and seed (paired)\n", FormatSeeds(rep.Seeds), len(rep.Seeds))
	fmt.Fprintf(&b, "- interval: percentile bootstrap of the mean paired difference B - A over seeds, %d resamples, level %g, bootstrap seed %d\n",
		s.Resamples, s.ConfidenceLevel, s.BootstrapSeed)
	fmt.Fprintf(&b, "- verdict: significant when the interval excludes 0; better or worse by the metric's direction (neutral metrics only say higher or lower); none on fewer than %d seeds, where no test at this level can reach significance\n\n",
		MinVerdictSeeds(s.ConfidenceLevel))

	b.WriteString("## Metrics\n\n")
	writeMarkdownTable(&b, abRows(rep), []bool{false, false, true, true, true, true, false})

	if len(rep.Reference) > 0 {
		b.WriteString("\n## Reference schedulers\n\nMeans over the same seeds.\n\n")
		rows := abRefRows(rep)
		right := make([]bool, len(rows[0]))
		for i := 1; i < len(right); i++ {
			right[i] = true
		}
		writeMarkdownTable(&b, rows, right)
	}
	if len(plots) > 0 {
		b.WriteString("\n## Plots\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "\n### %s\n\n![%s](%s)\n", p.Title, p.Title, p.File)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdownTable writes rows (the first is the header) as a GitHub
// Markdown table, right-aligning the columns marked in right.
func writeMarkdownTable(b *strings.Builder, rows [][]string, right []bool) {
	for i, row := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(row, " | "))
		if i == 0 {
			seps := make([]string, len(row))
			for k := range seps {
				seps[k] = "---"
				if k < len(right) && right[k] {
					seps[k] = "---:"
				}
			}
			fmt.Fprintf(b, "|%s|\n", strings.Join(seps, "|"))
		}
	}
}

// ParseABSeeds reads tegrl ab's --seeds with ParseSeeds, the one seeds
// grammar of every command (a bare number is one seed, "1-20" a range,
// "3,5,8" a list). A bare number is refused: it is one seed, over which no
// confidence interval can be drawn, and is most often meant as a count;
// the error says how to write either.
func ParseABSeeds(spec string) ([]uint64, error) {
	s := strings.TrimSpace(spec)
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return nil, fmt.Errorf("seeds %q: a bare number is one seed, and an A/B comparison needs several; write 1-%s for seeds 1 to %s, or %s-%s for that one seed", spec, s, s, s, s)
	}
	return ParseSeeds(spec)
}
