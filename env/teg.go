package env

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// TEGConfig switches and parameterises the Thermo-Economic Governor's
// mechanisms (docs/teg.md). Every mechanism can be turned off; the defaults
// are documented in docs/teg.md and set in DefaultTEG. Start from
// DefaultTEG or GovernorTEG and change fields: every field is used as given.
type TEGConfig struct {
	// Potential field (§1): V_i = Σ w·p(ρ) over CPU, memory, GPU, rack
	// network congestion and rack power, recomputed every FieldEvery ticks
	// and seen Staleness ticks late.
	Weights    FieldWeights
	FieldEvery int
	Staleness  int // ticks the agents' copy lags behind
	ColdList   int // size of the list of coldest machines

	// Langevin moves of running jobs (§3). Off by default: classic
	// schedulers place and never migrate; the langevin governor turns it on.
	Moves             bool
	Mobility          float64 // μ0: move attempts per job per second at D = 0
	MoveCandidates    int     // d for moves
	PlaceCandidates   int     // d for placements by the langevin scheduler
	MigrationCost     float64 // m_j in energy units
	MigrationDowntime float64 // seconds of lost progress per move
	Gamma0            float64 // base temperature γ0; T_eff = γ0/(1+D)
	GangPenalty       float64 // g_j: energy of a gang spanning NVLink groups
	Affinity          float32 // default affinity weight a_j of services

	// Safety layer (§4): discrete-time high-order control barrier functions
	// on machine memory and rack power.
	Safety    bool
	Alpha     float64 // CBF rate α in (0, 1]
	Horizon   float64 // prediction horizon H, s
	GrowthMax float64 // memory growth bound, fraction of request per second

	// Usage model (the world, not a policy): memory usage starts below the
	// request and grows; OveruseShare of jobs end above their request, by up
	// to MemOveruse.
	MemOveruse   float64
	OveruseShare float64

	// Landau damping controller (§5). Off by default (D = 0); the langevin
	// governor turns it on. A policy's Action.Damping overrides it.
	Controller bool
	DMax       float64
	PhiC       float64 // critical order parameter φ_c
	Width      float64 // w
	KChi       float64 // k_χ
	Chi0       float64 // χ_0, the susceptibility of a calm system
	Beta       float64 // smoothing β
	Window     int     // ticks of the rolling φ statistics
	CTax       float64 // admission tax c_tax

	// Tokens that evaporate (§6): fair-share priority of queued jobs.
	Tokens    bool
	HalfLife  float64 // s; λ = ln 2 / HalfLife; 0 = no evaporation
	GPUWeight float64 // tokens per GPU-second relative to a core-second
	AgeScale  float64 // s of waiting worth one unit of priority

	// Contention (§7): CPU oversubscription, GPU sharing, split gangs.
	Contention bool

	// Nash gap (§8): sampled every NashEvery ticks over NashSample jobs.
	NashEvery  int
	NashSample int

	// Reward (§9).
	Reward RewardWeights
}

// ParseOnOff reads on/off (also true/false, 1/0).
func ParseOnOff(s string) (bool, error) {
	switch s {
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q: want on or off", s)
}

// FieldWeights are the weights of the potential's pressure terms. Frag
// weighs an extension of ours: the GPU fragmentation (FGD's F_n(M), in
// GPUs) a job adds to a machine, which lets the field pack GPU jobs the way
// FGD does instead of only spreading load (docs/teg.md).
type FieldWeights struct {
	CPU, Mem, GPU, Net, Pow float64
	Frag                    float64
}

// RewardWeights are the weights of the per-tick reward's terms.
type RewardWeights struct {
	Success, Energy, Latency float64
	WaitSLA                  float64 // W_sla, s
}

// DefaultTEG holds the defaults of docs/teg.md, except the Langevin and
// controller parameters that the sweep on training seeds chose
// (docs/langevin-sweep.md): GPU pressure weight 0 and fragmentation weight
// 50 (model: 1 and none), 16 placement candidates (8), mobility 0.001/s
// (0.05), migration cost 20 (0.2), φ_c 1 (0.3), c_tax 0.01 (0.1).
var DefaultTEG = TEGConfig{
	Weights:           FieldWeights{CPU: 1, Mem: 1, GPU: 0, Net: 0.5, Pow: 0.5, Frag: 50},
	FieldEvery:        5,
	Staleness:         2,
	ColdList:          64,
	Mobility:          0.001,
	MoveCandidates:    2,
	PlaceCandidates:   16,
	MigrationCost:     20,
	MigrationDowntime: 30,
	Gamma0:            0.05,
	GangPenalty:       1,
	Affinity:          0.5,
	Safety:            true,
	Alpha:             0.5,
	Horizon:           60,
	GrowthMax:         1.0 / 600,
	MemOveruse:        0.3,
	OveruseShare:      0.1,
	DMax:              10,
	PhiC:              1,
	Width:             0.05,
	KChi:              1,
	Chi0:              0.1,
	Beta:              0.2,
	Window:            30,
	CTax:              0.01,
	Tokens:            true,
	HalfLife:          3600,
	GPUWeight:         10,
	AgeScale:          600,
	Contention:        true,
	NashEvery:         60,
	NashSample:        32,
	Reward:            RewardWeights{Success: 0.5, Energy: 0.3, Latency: 0.2, WaitSLA: 200},
}

// GovernorTEG returns the TEG configuration a scheduler runs under by
// default: the langevin governor drives moves and the damping controller;
// every other scheduler places jobs and leaves them where they are.
func GovernorTEG(scheduler string) TEGConfig {
	t := DefaultTEG
	if scheduler == "langevin" {
		t.Moves, t.Controller = true, true
	}
	return t
}

// Governed is implemented by schedulers that run under a TEG configuration
// of their own: a learned policy sets the damping itself, so it runs with
// the Landau controller off.
type Governed interface {
	Governor() TEGConfig
}

// GovernorFor is the configuration a run of s uses unless told otherwise:
// s's own when it is Governed, else GovernorTEG(s.Name()).
func GovernorFor(s Scheduler) TEGConfig {
	if g, ok := s.(Governed); ok {
		return g.Governor()
	}
	return GovernorTEG(s.Name())
}

// validate checks a configuration for a run with the given tick.
func (t *TEGConfig) validate(tick float64) error {
	finite := func(vs ...float64) bool {
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
		return true
	}
	w := t.Weights
	switch {
	case !finite(w.CPU, w.Mem, w.GPU, w.Net, w.Pow, t.Mobility, t.MigrationCost, t.MigrationDowntime, t.Gamma0, t.GangPenalty,
		t.Alpha, t.Horizon, t.GrowthMax, t.MemOveruse, t.OveruseShare, t.DMax, t.PhiC, t.Width, t.KChi, t.Chi0, t.Beta,
		t.CTax, t.HalfLife, t.GPUWeight, t.AgeScale, float64(t.Affinity)):
		return fmt.Errorf("TEG parameter is NaN or infinite: %+v", *t)
	case w.CPU < 0 || w.Mem < 0 || w.GPU < 0 || w.Net < 0 || w.Pow < 0 || w.Frag < 0 || math.IsNaN(w.Frag) || math.IsInf(w.Frag, 0):
		return fmt.Errorf("field weights %+v must be >= 0", w)
	case t.Staleness < 0:
		return fmt.Errorf("staleness %d must be >= 0", t.Staleness)
	case t.FieldEvery < 1 || t.ColdList < 1 || t.MoveCandidates < 1 || t.PlaceCandidates < 1 || t.Window < 2 || t.NashEvery < 1 || t.NashSample < 1:
		return fmt.Errorf("TEG counts must be positive (field every %d, cold list %d, candidates %d/%d, window %d, nash %d/%d)",
			t.FieldEvery, t.ColdList, t.MoveCandidates, t.PlaceCandidates, t.Window, t.NashEvery, t.NashSample)
	case t.Mobility < 0 || t.Gamma0 < 0 || t.MigrationCost < 0 || t.MigrationDowntime < 0 || t.GangPenalty < 0:
		return fmt.Errorf("mobility %v, temperature %v, migration cost %v/%v s, gang penalty %v must be >= 0",
			t.Mobility, t.Gamma0, t.MigrationCost, t.MigrationDowntime, t.GangPenalty)
	case t.Affinity < 0 || t.Affinity > 1:
		return fmt.Errorf("affinity %v outside [0, 1]", t.Affinity)
	case t.Alpha <= 0 || t.Alpha > 1:
		return fmt.Errorf("CBF alpha %v outside (0, 1]", t.Alpha)
	case t.Horizon < tick:
		return fmt.Errorf("safety horizon %v s must be at least one tick (%v s): the barrier is checked once a tick", t.Horizon, tick)
	case t.GrowthMax < 0 || t.MemOveruse < 0 || t.OveruseShare < 0 || t.OveruseShare > 1:
		return fmt.Errorf("growth %v, overuse %v, overuse share %v out of range", t.GrowthMax, t.MemOveruse, t.OveruseShare)
	case t.DMax < 0 || t.Width <= 0 || t.Beta <= 0 || t.Beta > 1 || t.CTax < 0 || t.Chi0 < 0 || t.PhiC < 0:
		return fmt.Errorf("controller parameters out of range: Dmax %v, w %v, beta %v, c_tax %v, chi0 %v", t.DMax, t.Width, t.Beta, t.CTax, t.Chi0)
	case t.HalfLife < 0 || t.GPUWeight < 0 || t.AgeScale <= 0:
		return fmt.Errorf("token half-life %v, GPU weight %v, age scale %v out of range", t.HalfLife, t.GPUWeight, t.AgeScale)
	case t.Reward.Success < 0 || t.Reward.Energy < 0 || t.Reward.Latency < 0 || !(t.Reward.WaitSLA > 0):
		return fmt.Errorf("reward weights %+v out of range", t.Reward)
	}
	return nil
}

// pressure is the M/M/1 queueing pressure p(ρ) = ρ/(1-ρ+ε), ρ clipped to
// [0, 1]: flat when idle, steep near saturation.
func pressure(rho float64) float64 {
	const eps = 0.02
	rho = max(0, min(1, rho))
	return rho / (1 - rho + eps)
}

// tegParams maps the parameter names the CLI and the sweep use to fields.
func (t *TEGConfig) params() map[string]*float64 {
	return map[string]*float64{
		"mobility":           &t.Mobility,
		"temperature":        &t.Gamma0,
		"migration-cost":     &t.MigrationCost,
		"migration-downtime": &t.MigrationDowntime,
		"gang-penalty":       &t.GangPenalty,
		"w-cpu":              &t.Weights.CPU,
		"w-mem":              &t.Weights.Mem,
		"w-gpu":              &t.Weights.GPU,
		"w-net":              &t.Weights.Net,
		"w-pow":              &t.Weights.Pow,
		"w-frag":             &t.Weights.Frag,
		"alpha":              &t.Alpha,
		"horizon":            &t.Horizon,
		"growth-max":         &t.GrowthMax,
		"d-max":              &t.DMax,
		"phi-c":              &t.PhiC,
		"width":              &t.Width,
		"k-chi":              &t.KChi,
		"chi0":               &t.Chi0,
		"beta":               &t.Beta,
		"c-tax":              &t.CTax,
		"half-life":          &t.HalfLife,
		"gpu-weight":         &t.GPUWeight,
		"age-scale":          &t.AgeScale,
		"mem-overuse":        &t.MemOveruse,
		"overuse-share":      &t.OveruseShare,
	}
}

// tegInts maps the integer parameters.
func (t *TEGConfig) ints() map[string]*int {
	return map[string]*int{
		"place-candidates": &t.PlaceCandidates,
		"move-candidates":  &t.MoveCandidates,
		"field-every":      &t.FieldEvery,
		"staleness":        &t.Staleness,
		"cold-list":        &t.ColdList,
		"window":           &t.Window,
	}
}

// tegSwitches maps the on/off mechanisms (value 0 or 1).
func (t *TEGConfig) switches() map[string]*bool {
	return map[string]*bool{
		"safety":     &t.Safety,
		"moves":      &t.Moves,
		"controller": &t.Controller,
		"tokens":     &t.Tokens,
		"contention": &t.Contention,
	}
}

// Set assigns a parameter by the name the CLI uses ("temperature",
// "w-frag", "place-candidates", "controller", ...). Integers must be
// integral; switches take 0 or 1.
func (t *TEGConfig) Set(name string, v float64) error {
	if p, ok := t.params()[name]; ok {
		*p = v
		return nil
	}
	if p, ok := t.ints()[name]; ok {
		if v != math.Trunc(v) || math.Abs(v) > 1<<30 {
			return fmt.Errorf("TEG parameter %s wants an integer, got %v", name, v)
		}
		*p = int(v)
		return nil
	}
	if p, ok := t.switches()[name]; ok {
		if v != 0 && v != 1 {
			return fmt.Errorf("TEG switch %s wants 0 or 1, got %v", name, v)
		}
		*p = v == 1
		return nil
	}
	return fmt.Errorf("unknown TEG parameter %q (have %s)", name, strings.Join(TEGParamNames(), ", "))
}

// TEGParamNames lists the names Set accepts, sorted.
func TEGParamNames() []string {
	var t TEGConfig
	var names []string
	for n := range t.params() {
		names = append(names, n)
	}
	for n := range t.ints() {
		names = append(names, n)
	}
	for n := range t.switches() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
