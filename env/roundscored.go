package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// ScoredPolicy is a learned allocation policy for the round simulator: it
// scores every (active job, GPU type) pair with a linear function of
// features a real scheduler sees (attained service, age, gang size, the
// job's throughput on the type against its best, where it ran in the
// previous round, the cluster's load) and gives the pairs, best score
// first, one whole gang each while GPUs of the type are free. A pair whose
// score is not positive is never allocated: the policy may leave slow
// GPUs idle rather than start a job there. It never reads a job's steps
// (StepsTotal, StepsLeft): it is not clairvoyant, unless Clairvoyant adds
// the job's remaining run time as a feature, which makes it a bound to
// measure the others against, not a policy a real scheduler can run.
//
// The weights come from training (rl.TrainRound, evolution strategies on
// the round simulator) and are saved as a JSON policy file
// (WriteScoredPolicy); AllocationPolicyByName loads such a file by path.
type ScoredPolicy struct {
	// Weights has one weight per feature, in ScoredFeatures order, then
	// ClairvoyantFeature's when Clairvoyant.
	Weights []float64
	// Clairvoyant adds ClairvoyantFeature.
	Clairvoyant bool
	// Pack is a policy file's pack field: AllocationPolicyByName then
	// gives a PackedScoredPolicy. ScoredPolicy.Allocate itself never packs.
	Pack bool
	// Exchange swaps gangs between types, and moves them onto free GPUs,
	// after the greedy pass while that lowers their summed slowdown
	// (exchange): the score decides which gangs run, the exchange where.
	Exchange bool
	// Consolidate runs a gang whose model is sensitive to placement on one
	// server only, by Tiresias's rule (MustConsolidate): spread over
	// servers it would run at under half its consolidated throughput. It
	// acts where the simulator models servers (RoundConfig.Locality: the
	// node-list clusters), not on Gavel's protocol, and changes no
	// allocation, only where a gang may be placed.
	Consolidate bool
	// Upgrade lets the round mechanism run a gang, until the next
	// allocation, on idle GPUs of a type faster for it than the one it
	// was allocated (RoundHints.Upgrade). The policy allocates only when
	// a job arrives or finishes, at most every AllocationInterval; GPUs a
	// completion frees in between would otherwise stand idle.
	Upgrade bool

	prev  map[int]int // job ID -> type it was allocated last round
	next  map[int]int
	pairs []scoredPair
	free  []int
	done  []bool
	feat  ScoredFeatureSet

	// exchange's buffers
	xtyp   []int
	xbest  []float64
	xa, xb []xchEntry
	xsizes []int      // the allocated gangs' sizes
	xcand  []xchEntry // swapUnequal's best partners, by (type, type, size)
}

type scoredPair struct {
	score float64
	job   int // index into RoundState.Jobs
	typ   int
}

// ScoredFeatures names the features of a (job, type) pair, in weight
// order. Hours are simulated hours; logs are natural.
var ScoredFeatures = []string{
	"bias",           // 1
	"log_attained",   // log(1 + attained GPU-hours)
	"log_age",        // log(1 + hours since arrival)
	"log2_scale",     // log2(GPUs of the gang)
	"log_rel_thr",    // log(throughput on this type / on the job's best type), <= 0
	"same_type",      // 1 if the job ran on this type last round
	"running",        // 1 if the job ran last round (on any type)
	"log_spread",     // log(best throughput / mean throughput over types): how much type matters to the job
	"served_frac",    // attained GPU-seconds / (scale x age): the share of its life it ran
	"rel_thr_x_load", // log_rel_thr x log(1 + gangs' GPUs demanded / GPUs)
}

// NumScoredFeatures is len(ScoredFeatures).
var NumScoredFeatures = len(ScoredFeatures)

// ClairvoyantFeature is the clairvoyant scored policy's extra feature:
// log(1 + hours the job still needs alone on this type).
const ClairvoyantFeature = "log_remaining_h"

// ScoredFeatureNames is the feature list of a scored policy, with
// ClairvoyantFeature last when clairvoyant.
func ScoredFeatureNames(clairvoyant bool) []string {
	if clairvoyant {
		return append(slices.Clip(ScoredFeatures), ClairvoyantFeature)
	}
	return ScoredFeatures
}

// DefaultScoredWeights rank jobs first come, first served on their fastest
// free type, the starting point of training: older jobs first (age), the
// best type preferred, every pair positive.
func DefaultScoredWeights() []float64 {
	w := make([]float64, NumScoredFeatures)
	w[0], w[2], w[4] = 10, 1, 1
	return w
}

// Name implements AllocationPolicy.
func (p *ScoredPolicy) Name() string {
	if p.Clairvoyant {
		return "scored_clairvoyant"
	}
	return "scored"
}

// IsClairvoyant implements ClairvoyantPolicy.
func (p *ScoredPolicy) IsClairvoyant() bool { return p.Clairvoyant }

// MustConsolidate implements ConsolidatingPolicy: with Consolidate, a
// placement-sensitive gang runs on one server or waits the round.
func (p *ScoredPolicy) MustConsolidate(consolidated, spread float64) bool {
	return p.Consolidate && placementSensitive(consolidated, spread)
}

// RoundHints implements RoundHintsPolicy: a job runs only where it is
// allocated, so that a non-positive score keeps it off a type, or with
// Upgrade also on idle GPUs of a type faster for it.
func (p *ScoredPolicy) RoundHints() RoundHints {
	return RoundHints{SkipUnallocated: true, Upgrade: p.Upgrade}
}

// Allocate implements AllocationPolicy.
func (p *ScoredPolicy) Allocate(s *RoundState, x []float64) error {
	names := ScoredFeatureNames(p.Clairvoyant)
	nf, nt := len(names), len(s.Types)
	if len(p.Weights) != nf {
		return fmt.Errorf("scored policy: %d weights, want %d (%s)", len(p.Weights), nf, strings.Join(names, ", "))
	}
	if p.prev == nil {
		p.prev, p.next = map[int]int{}, map[int]int{}
	}
	p.feat.Compute(s, p.prev, p.Clairvoyant)
	p.pairs = p.pairs[:0]
	for r, q := range p.feat.Pairs {
		sc := 0.0
		for k, w := range p.Weights {
			sc += w * p.feat.X[r*nf+k]
		}
		if sc > 0 {
			p.pairs = append(p.pairs, scoredPair{score: sc, job: q.Job, typ: q.Type})
		}
	}
	// Best score first; ties by job then type keep the order deterministic.
	slices.SortFunc(p.pairs, func(a, b scoredPair) int {
		if c := cmpFloat(b.score, a.score); c != 0 {
			return c
		}
		if a.job != b.job {
			return a.job - b.job
		}
		return a.typ - b.typ
	})
	p.free = append(p.free[:0], s.Capacity...)
	p.done = slices.Grow(p.done[:0], len(s.Jobs))[:len(s.Jobs)]
	clear(p.done)
	clear(x)
	clear(p.next)
	for _, q := range p.pairs {
		sc := s.Jobs[q.job].Scale
		if p.done[q.job] || p.free[q.typ] < sc {
			continue
		}
		p.done[q.job] = true
		p.free[q.typ] -= sc
		x[q.job*nt+q.typ] = 1
		p.next[s.Jobs[q.job].ID] = q.typ
	}
	if p.Exchange {
		p.exchange(s, x)
	}
	p.prev, p.next = p.next, p.prev
	return nil
}

// ScoredPolicyFile is the JSON form of a trained ScoredPolicy.
type ScoredPolicyFile struct {
	Kind     string    `json:"kind"` // "tegrl-scored-allocation"
	Features []string  `json:"features"`
	Weights  []float64 `json:"weights"`
	// Pack makes it a PackedScoredPolicy: GPUs are space-shared.
	Pack bool `json:"pack,omitempty"`
	// Exchange is ScoredPolicy.Exchange.
	Exchange bool `json:"exchange,omitempty"`
	// Consolidate is ScoredPolicy.Consolidate.
	Consolidate bool `json:"consolidate,omitempty"`
	// Upgrade is ScoredPolicy.Upgrade.
	Upgrade bool `json:"upgrade,omitempty"`
	// Training records how the weights were found (free-form, for people).
	Training map[string]any `json:"training,omitempty"`
}

// ScoredPolicyKind is the kind field of a scored policy file.
const ScoredPolicyKind = "tegrl-scored-allocation"

// ParseScoredPolicy reads a scored policy file: its kind and feature names
// must be this build's (ScoredFeatures, or with ClairvoyantFeature last: a
// clairvoyant policy) and every weight finite.
func ParseScoredPolicy(data []byte) (*ScoredPolicy, error) {
	var f ScoredPolicyFile
	if err := decodePolicyFile(data, &f); err != nil {
		return nil, fmt.Errorf("scored policy: %w", err)
	}
	clair, err := checkPolicyFile(f.Kind, ScoredPolicyKind, f.Features, ScoredFeatures, f.Weights)
	if err != nil {
		return nil, fmt.Errorf("scored policy: %w", err)
	}
	return &ScoredPolicy{Weights: f.Weights, Clairvoyant: clair, Pack: f.Pack, Exchange: f.Exchange, Consolidate: f.Consolidate, Upgrade: f.Upgrade}, nil
}

// decodePolicyFile decodes one JSON object into v, refusing unknown fields
// and anything after the object.
func decodePolicyFile(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

// checkPolicyFile checks a learned policy file's kind, its feature names
// (features, or features then ClairvoyantFeature: a clairvoyant policy,
// which it reports) and one finite weight per feature.
func checkPolicyFile(kind, wantKind string, names, features []string, weights []float64) (clairvoyant bool, err error) {
	if kind != wantKind {
		return false, fmt.Errorf("kind %q, want %q", kind, wantKind)
	}
	clairvoyant = len(names) == len(features)+1 && slices.Equal(names[:len(features)], features) && names[len(features)] == ClairvoyantFeature
	if !clairvoyant && !slices.Equal(names, features) {
		return false, fmt.Errorf("features %v, this build has %v (and %s for a clairvoyant policy)", names, features, ClairvoyantFeature)
	}
	if len(weights) != len(names) {
		return false, fmt.Errorf("%d weights for %d features", len(weights), len(names))
	}
	for i, w := range weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return false, fmt.Errorf("weight %d (%s) is %v", i, names[i], w)
		}
	}
	return clairvoyant, nil
}

// WriteScoredPolicy writes weights as a scored policy file at path; one
// weight more than ScoredFeatures makes it a clairvoyant policy.
func WriteScoredPolicy(path string, weights []float64, training map[string]any) error {
	return WriteScoredPolicyFile(path, ScoredPolicy{Weights: weights}, training)
}

// WritePackedScoredPolicy writes weights as a packed scored policy file
// (pack true): AllocationPolicyByName loads it as a PackedScoredPolicy.
func WritePackedScoredPolicy(path string, weights []float64, training map[string]any) error {
	return WriteScoredPolicyFile(path, ScoredPolicy{Weights: weights, Pack: true}, training)
}

// WriteScoredPolicyFile writes p's weights, Pack, Exchange, Consolidate
// and Upgrade as a scored policy file at path; one weight more than
// ScoredFeatures makes it a clairvoyant policy (p.Clairvoyant is not
// read).
func WriteScoredPolicyFile(path string, p ScoredPolicy, training map[string]any) error {
	weights := p.Weights
	names := ScoredFeatureNames(len(weights) == NumScoredFeatures+1)
	if len(weights) != len(names) {
		return fmt.Errorf("scored policy: %d weights for %d features", len(weights), len(names))
	}
	b, err := json.MarshalIndent(ScoredPolicyFile{Kind: ScoredPolicyKind, Features: names, Weights: weights, Pack: p.Pack, Exchange: p.Exchange, Consolidate: p.Consolidate, Upgrade: p.Upgrade, Training: training}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// IsPolicyFile tells whether an allocation policy name is a path to a
// scored policy file rather than a registered name.
func IsPolicyFile(name string) bool { return strings.HasSuffix(name, ".json") }

// loadScoredPolicyFile reads the policy file at path: a scored policy, or
// a tiered one (TieredPolicyKind).
func loadScoredPolicyFile(path string) (AllocationPolicy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("allocation policy file: %w", err)
	}
	if PolicyFileKind(b) == TieredPolicyKind {
		t, err := ParseTieredPolicy(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return t, nil
	}
	p, err := ParseScoredPolicy(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.Pack {
		return &PackedScoredPolicy{ScoredPolicy: *p}, nil
	}
	return p, nil
}
