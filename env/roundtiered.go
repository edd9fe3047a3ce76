package env

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// TieredPackedPolicy is a learned allocation policy that keeps Gavel's
// max_min_fairness_packed linear program (MaxMinFairnessPacked: time
// shares and space-sharing pairs chosen together) and learns only which
// jobs it should favour. A linear score over features a real scheduler
// sees (attained service, age, gang size, how much GPU type matters to the
// job, the share of its life it has run, how loaded the cluster is)
// splits the active jobs into two tiers; a job in the upper tier (score >
// 0) enters the LP with its priority multiplied by exp(LogRatio +
// LoadSlope × log_load), so max-min fairness gives it that many times the
// normalised throughput of a lower-tier job. A negative LoadSlope favours
// the upper tier less as the cluster fills, when the lower tier's longest
// jobs would otherwise wait longest. With the default weights the upper
// tier is the jobs with less than one GPU-hour of service, weighted 4:
// least attained service, as Tiresias (Gu et al., "Tiresias: A GPU
// Cluster Manager for Distributed Deep Learning", NSDI 2019) applies it,
// inside Gavel's packed LP.
//
// Two tiers keep the LP small: its jobs are grouped into classes of one
// job type and priority, so the tiers at most double the classes of
// max_min_fairness_packed. The tier is decided when the LP is solved,
// which the round mechanism does when a job arrives or finishes.
//
// Clairvoyant adds the job's remaining run time on its fastest type as a
// feature, and MaxUpperHours keeps the jobs with more than that many hours
// left out of the upper tier; either makes the policy a bound to measure
// the others against, not one a real scheduler can run.
type TieredPackedPolicy struct {
	// Weights has one weight per TieredFeatureNames(Clairvoyant) feature.
	Weights []float64
	// LogRatio is the natural log of the upper tier's priority factor
	// when the active jobs demand exactly the cluster's GPUs.
	LogRatio float64
	// LoadSlope is how the log factor moves with log_load (log of the
	// GPUs the active jobs demand over the cluster's GPUs); the sum is
	// held within ±10.
	LoadSlope float64
	// Clairvoyant adds ClairvoyantFeature (log(1 + remaining hours on
	// the job's fastest type)).
	Clairvoyant bool
	// MaxUpperHours, when positive, keeps a job whose remaining work
	// alone on its fastest type exceeds this many hours out of the upper
	// tier, whatever its score: favouring new jobs is a guess that they
	// are short, which this checks against their remaining work. It reads
	// StepsLeft, so it makes the policy clairvoyant.
	MaxUpperHours float64
	// GangGuardHours, when positive, puts every gang (a job of more than
	// one GPU) that arrived more than this many hours ago in the upper
	// tier, whatever its score. A lower-tier job gets what the upper tier
	// leaves, and a gang needs that residue on several GPUs of one type
	// at once: on the spot cluster's multi-GPU workload at full load the
	// oldest gangs then run so slowly that the queue never drains. It is
	// set by hand: Gavel's single-GPU protocol, which trains the tiered
	// policy, has no gangs.
	GangGuardHours float64
	// AgeGuardHours, when positive, does the same for every job: past
	// capacity the lower tier's max-min share shrinks as the queue grows,
	// and a job left there can miss any finite deadline. It must be
	// long, so that it lifts only the few jobs a growing queue leaves
	// behind: an upper tier full of old jobs no longer favours new ones.
	AgeGuardHours float64
	// TieDeficit is the LP's MaxMinFairnessPacked.TieDeficit: favouring
	// new jobs caps what a lower-tier job is guaranteed at the max-min
	// level, and the tie-break that shares out the rest otherwise gives
	// the spare fast GPUs to the same lower-tier jobs at every solve,
	// which lengthens the longest jobs' wait.
	TieDeficit float64
	// Support, when set, restricts the LP to these columns: a student
	// distilled from a tiered teacher (ColumnSupport).
	Support *ColumnSupport
	// MaxPairColumns is the LP's MaxMinFairnessPacked.MaxPairColumns.
	MaxPairColumns int

	lp   MaxMinFairnessPacked
	jobs []RoundJob
	f    []float64
	load float64 // log_load of the state being allocated
}

// TieredFeatures names the job features of a TieredPackedPolicy's tier
// score, in weight order. Hours are simulated hours; logs are natural.
var TieredFeatures = []string{
	"bias",         // 1
	"log_attained", // log(1 + attained GPU-hours)
	"log_age",      // log(1 + hours since arrival)
	"log2_scale",   // log2(GPUs of the gang)
	"log_spread",   // log(best throughput / mean throughput over types): how much type matters to the job
	"served_frac",  // attained GPU-seconds / (scale x age): the share of its life it ran
	"log_load",     // log(GPUs the active jobs demand / the cluster's GPUs): the same for every job, it moves the tier threshold with load
}

// TieredFeatureNames is the feature list of a tiered policy, with
// ClairvoyantFeature last when clairvoyant.
func TieredFeatureNames(clairvoyant bool) []string {
	if clairvoyant {
		return append(slices.Clip(TieredFeatures), ClairvoyantFeature)
	}
	return TieredFeatures
}

// DefaultTieredParams are the starting point of training, as weights
// then the log priority ratio: the upper tier is the jobs with under one
// GPU-hour of service (log 2 - log(1 + attained) > 0), favoured 4 to 1.
// clairvoyant appends a 0 weight for ClairvoyantFeature.
func DefaultTieredParams(clairvoyant bool) (weights []float64, logRatio float64) {
	w := make([]float64, len(TieredFeatureNames(clairvoyant)))
	w[0], w[1] = math.Ln2, -1
	return w, math.Log(4)
}

// maxTieredLogRatio bounds |LogRatio|: a ratio beyond e^10 only makes the
// LP's coefficients ill-conditioned, it favours no further.
const maxTieredLogRatio = 10

// Name implements AllocationPolicy.
func (p *TieredPackedPolicy) Name() string {
	if p.IsClairvoyant() {
		return "tiered_packed_clairvoyant"
	}
	return "tiered_packed"
}

// IsClairvoyant implements ClairvoyantPolicy.
func (p *TieredPackedPolicy) IsClairvoyant() bool { return p.Clairvoyant || p.MaxUpperHours > 0 }

// Clone is a policy with p's parameters and buffers of its own (the
// support, never written, is shared).
func (p *TieredPackedPolicy) Clone() *TieredPackedPolicy {
	return &TieredPackedPolicy{Weights: slices.Clone(p.Weights), LogRatio: p.LogRatio, LoadSlope: p.LoadSlope, Clairvoyant: p.Clairvoyant,
		MaxUpperHours: p.MaxUpperHours, GangGuardHours: p.GangGuardHours, AgeGuardHours: p.AgeGuardHours, TieDeficit: p.TieDeficit, Support: p.Support,
		MaxPairColumns: p.MaxPairColumns}
}

// Used lists the columns with a positive value in the last allocation's
// LP (MaxMinFairnessPacked.Used).
func (p *TieredPackedPolicy) Used() []UsedColumn { return p.lp.Used() }

// Pairs implements PackingPolicy: the LP's co-located pairs.
func (p *TieredPackedPolicy) Pairs(s *RoundState) []RoundPair { return p.lp.Pairs(s) }

// Tier reports whether job i of s is in the upper tier.
func (p *TieredPackedPolicy) Tier(s *RoundState, i int) bool {
	p.load = LogLoad(s)
	return p.tier(s, i)
}

// tier is Tier with p.load already computed for s.
func (p *TieredPackedPolicy) tier(s *RoundState, i int) bool {
	age := s.Time - s.Jobs[i].Arrival
	if (p.GangGuardHours > 0 && s.Jobs[i].Scale > 1 && age > p.GangGuardHours*3600) || (p.AgeGuardHours > 0 && age > p.AgeGuardHours*3600) {
		return true
	}
	p.f = tieredFeatures(p.f, s, i, p.load, p.Clairvoyant)
	sc := 0.0
	for k, w := range p.Weights {
		sc += w * p.f[k]
	}
	if sc > 0 && p.MaxUpperHours > 0 {
		if best, _, _, _ := jobStats(s, i); best > 0 && s.Jobs[i].StepsLeft/best > p.MaxUpperHours*3600 {
			return false
		}
	}
	return sc > 0
}

// Allocate implements AllocationPolicy: the LP of MaxMinFairnessPacked
// over the jobs with their tiers' priorities.
func (p *TieredPackedPolicy) Allocate(s *RoundState, x []float64) error {
	names := TieredFeatureNames(p.Clairvoyant)
	if len(p.Weights) != len(names) {
		return fmt.Errorf("%s: %d weights, want %d (%s)", p.Name(), len(p.Weights), len(names), strings.Join(names, ", "))
	}
	if err := p.check(); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	p.load = LogLoad(s)
	p.lp.TieDeficit, p.lp.Support, p.lp.MaxPairColumns = p.TieDeficit, p.Support.At(p.load), p.MaxPairColumns
	ratio := math.Exp(max(-maxTieredLogRatio, min(maxTieredLogRatio, p.LogRatio+p.LoadSlope*p.load)))
	p.jobs = append(p.jobs[:0], s.Jobs...)
	for i := range p.jobs {
		if p.tier(s, i) {
			p.jobs[i].Priority *= ratio
		}
	}
	orig := s.Jobs
	s.Jobs = p.jobs
	err := p.lp.Allocate(s, x)
	s.Jobs = orig
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	return nil
}

// MaxTieDeficit bounds a tiered policy's TieDeficit: past it the
// tie-break is all deficit and the LP's coefficients only grow
// ill-conditioned.
const MaxTieDeficit = 1e4

// check checks a tiered policy's parameters other than its weights,
// naming each by its file field.
func (p *TieredPackedPolicy) check() error {
	if !(math.Abs(p.LogRatio) <= maxTieredLogRatio) {
		return fmt.Errorf("log_priority_ratio %v, want within ±%d", p.LogRatio, maxTieredLogRatio)
	}
	if !(math.Abs(p.LoadSlope) <= maxTieredLogRatio) {
		return fmt.Errorf("log_ratio_load_slope %v, want within ±%d", p.LoadSlope, maxTieredLogRatio)
	}
	if !(p.MaxUpperHours >= 0 && p.MaxUpperHours < math.Inf(1)) {
		return fmt.Errorf("max_upper_remaining_h %v, want a finite number of hours >= 0 (0: no cap)", p.MaxUpperHours)
	}
	if !(p.GangGuardHours >= 0 && p.GangGuardHours < math.Inf(1)) {
		return fmt.Errorf("gang_guard_h %v, want a finite number of hours >= 0 (0: no guard)", p.GangGuardHours)
	}
	if !(p.AgeGuardHours >= 0 && p.AgeGuardHours < math.Inf(1)) {
		return fmt.Errorf("age_guard_h %v, want a finite number of hours >= 0 (0: no guard)", p.AgeGuardHours)
	}
	if !(p.TieDeficit >= 0 && p.TieDeficit <= MaxTieDeficit) {
		return fmt.Errorf("tie_deficit_weight %v, want within [0, %g] (0: Gavel's tie-break)", p.TieDeficit, float64(MaxTieDeficit))
	}
	return p.Support.check()
}

// LogLoad is the log_load feature of s: log(GPUs its active jobs demand /
// the cluster's GPUs), 0 for an empty state or cluster. A tiered
// policy's priority ratio and its support's band follow it.
func LogLoad(s *RoundState) float64 {
	asked, gpus := s.demand()
	if asked == 0 || gpus == 0 {
		return 0
	}
	return math.Log(float64(asked) / float64(gpus))
}

// tieredFeatures fills f with job i's TieredFeatureNames features; load
// is LogLoad(s).
func tieredFeatures(f []float64, s *RoundState, i int, load float64, clairvoyant bool) []float64 {
	j := s.Jobs[i]
	best, spread, ageH, served := jobStats(s, i)
	f = append(f[:0], 1, math.Log1p(j.Attained/3600), math.Log1p(ageH), math.Log2(float64(j.Scale)), spread, served, load)
	if clairvoyant {
		rem := 0.0
		if best > 0 {
			rem = math.Log1p(j.StepsLeft / best / 3600)
		}
		f = append(f, rem)
	}
	return f
}

// TieredPolicyFile is the JSON form of a trained TieredPackedPolicy.
type TieredPolicyFile struct {
	Kind     string    `json:"kind"` // "tegrl-tiered-packed-allocation"
	Features []string  `json:"features"`
	Weights  []float64 `json:"weights"`
	// LogPriorityRatio is TieredPackedPolicy.LogRatio.
	LogPriorityRatio float64 `json:"log_priority_ratio"`
	// LogRatioLoadSlope is TieredPackedPolicy.LoadSlope (0 when absent).
	LogRatioLoadSlope float64 `json:"log_ratio_load_slope"`
	// MaxUpperRemainingHours is TieredPackedPolicy.MaxUpperHours (0 or
	// absent: no cap); a positive cap makes the file clairvoyant.
	MaxUpperRemainingHours float64 `json:"max_upper_remaining_h,omitempty"`
	// GangGuardHours is TieredPackedPolicy.GangGuardHours (0 or absent:
	// no guard).
	GangGuardHours float64 `json:"gang_guard_h,omitempty"`
	// AgeGuardHours is TieredPackedPolicy.AgeGuardHours (0 or absent: no
	// guard).
	AgeGuardHours float64 `json:"age_guard_h,omitempty"`
	// TieDeficit is TieredPackedPolicy.TieDeficit (0 or absent: Gavel's
	// tie-break).
	TieDeficit float64 `json:"tie_deficit_weight,omitempty"`
	// Support is TieredPackedPolicy.Support by name (absent: every
	// column): job types alone on a GPU type, and pairs of job types
	// sharing one.
	Support *SupportFile `json:"support,omitempty"`
	// Training records how the parameters were found (free-form, for
	// people).
	Training map[string]any `json:"training,omitempty"`
}

// SupportFile is a ColumnSupport in a policy file: [job type, GPU type]
// and [job type, job type, GPU type] entries of the bundled table.
type SupportFile struct {
	Alone [][2]string `json:"alone"`
	Pairs [][3]string `json:"pairs"`
	// MaxLogLoad is ColumnSupport.MaxLogLoad (absent: every load).
	MaxLogLoad *float64 `json:"max_log_load,omitempty"`
	// Above is ColumnSupport.Above: the band past MaxLogLoad (absent:
	// the full LP there).
	Above *SupportFile `json:"above,omitempty"`
	// Price is ColumnSupport.Price: the columns outside the band enter
	// when they improve the LP.
	Price bool `json:"price,omitempty"`
}

// TieredPolicyKind is the kind field of a tiered policy file.
const TieredPolicyKind = "tegrl-tiered-packed-allocation"

// ParseTieredPolicy reads a tiered policy file: its kind and feature
// names must be this build's (TieredFeatures, or with ClairvoyantFeature
// last: a clairvoyant policy), every weight finite, the log ratio and
// its load slope within ±10, the cap on the upper tier's remaining hours
// and the guards finite and not negative, the tie-break's deficit
// weight within [0, 1e4].
func ParseTieredPolicy(data []byte) (*TieredPackedPolicy, error) {
	var f TieredPolicyFile
	if err := decodePolicyFile(data, &f); err != nil {
		return nil, fmt.Errorf("tiered policy: %w", err)
	}
	clair, err := checkPolicyFile(f.Kind, TieredPolicyKind, f.Features, TieredFeatures, f.Weights)
	if err != nil {
		return nil, fmt.Errorf("tiered policy: %w", err)
	}
	p := &TieredPackedPolicy{Weights: f.Weights, LogRatio: f.LogPriorityRatio, LoadSlope: f.LogRatioLoadSlope, Clairvoyant: clair,
		MaxUpperHours: f.MaxUpperRemainingHours, GangGuardHours: f.GangGuardHours, AgeGuardHours: f.AgeGuardHours, TieDeficit: f.TieDeficit}
	if f.Support != nil {
		t, err := GavelThroughputTable()
		if err != nil {
			return nil, err
		}
		if p.Support, err = f.Support.columnSupport(t, 0); err != nil {
			return nil, fmt.Errorf("tiered policy: %w", err)
		}
	}
	if err := p.check(); err != nil { // the support's bands too
		return nil, fmt.Errorf("tiered policy: %w", err)
	}
	return p, nil
}

// columnSupport builds band k of a support and those above it.
func (f *SupportFile) columnSupport(t *ThroughputTable, k int) (*ColumnSupport, error) {
	if k >= MaxSupportBands {
		return nil, fmt.Errorf("support: more than %d bands", MaxSupportBands)
	}
	var cols []SupportColumn
	for _, a := range f.Alone {
		cols = append(cols, SupportColumn{A: a[0], GPU: a[1]})
	}
	for _, pr := range f.Pairs {
		if pr[1] == "" {
			return nil, fmt.Errorf("support band %d pair %q: no second job type", k, pr)
		}
		cols = append(cols, SupportColumn{A: pr[0], B: pr[1], GPU: pr[2]})
	}
	s, err := NewColumnSupport(t, cols)
	if err != nil {
		return nil, fmt.Errorf("support band %d: %w", k, err)
	}
	if m := f.MaxLogLoad; m != nil {
		s.MaxLogLoad = *m
	}
	s.Price = f.Price
	if f.Above != nil {
		if f.MaxLogLoad == nil {
			return nil, fmt.Errorf("support band %d: a band above it, and no max_log_load", k)
		}
		if s.Above, err = f.Above.columnSupport(t, k+1); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// supportFile is s as a SupportFile, its bands above included.
func supportFile(t *ThroughputTable, s *ColumnSupport) *SupportFile {
	f := &SupportFile{Alone: [][2]string{}, Pairs: [][3]string{}, Price: s.Price}
	if m := s.MaxLogLoad; !math.IsInf(m, 1) {
		f.MaxLogLoad = &m
	}
	for _, c := range s.Columns(t) {
		if c.B == "" {
			f.Alone = append(f.Alone, [2]string{c.A, c.GPU})
		} else {
			f.Pairs = append(f.Pairs, [3]string{c.A, c.B, c.GPU})
		}
	}
	if s.Above != nil {
		f.Above = supportFile(t, s.Above)
	}
	return f
}

// WriteTieredPolicy writes p as a tiered policy file at path; one weight
// more than TieredFeatures makes it a clairvoyant policy.
func WriteTieredPolicy(path string, p *TieredPackedPolicy, training map[string]any) error {
	names := TieredFeatureNames(len(p.Weights) == len(TieredFeatures)+1)
	if len(p.Weights) != len(names) {
		return fmt.Errorf("tiered policy: %d weights for %d features", len(p.Weights), len(names))
	}
	if err := p.check(); err != nil {
		return fmt.Errorf("tiered policy: %w", err)
	}
	f := TieredPolicyFile{Kind: TieredPolicyKind, Features: names, Weights: p.Weights,
		LogPriorityRatio: p.LogRatio, LogRatioLoadSlope: p.LoadSlope, MaxUpperRemainingHours: p.MaxUpperHours, GangGuardHours: p.GangGuardHours,
		AgeGuardHours: p.AgeGuardHours, TieDeficit: p.TieDeficit, Training: training}
	if p.Support != nil {
		t, err := GavelThroughputTable()
		if err != nil {
			return err
		}
		f.Support = supportFile(t, p.Support)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// PolicyFileKind returns a policy file's kind field ("" if it has none or
// is not a JSON object).
func PolicyFileKind(data []byte) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(data, &k)
	return k.Kind
}
