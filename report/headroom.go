package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tegrl/tegrl/env"
)

// The headroom report: how far the heuristics' average JCT is from the
// zero-wait floor and from clairvoyant bounds (srtf_oracle and a lookahead
// over the heuristics' choices), per cluster, workload and arrival rate or
// offered GPU load. The gap is the room a learned policy can aim at.

// MergeHeadroom arranges points read back from `tegrl headroom --json`
// runs (in any order, from several runs) for WriteHeadroom: scenarios and
// policies in order of first appearance, each scenario's rates the union
// over its points, ascending; a (policy, rate) never run is a point
// without seeds, shown as "-". A later point for the same scenario, policy
// and rate replaces an earlier one.
func MergeHeadroom(in []HeadroomPoint) (HeadroomConfig, []HeadroomPoint) {
	var cfg HeadroomConfig
	type key struct {
		sc, pol string
		rate    float64
	}
	got := map[key]HeadroomPoint{}
	rates := map[string][]float64{}
	loads := map[string]map[float64]float64{}
	for _, p := range in {
		if !slices.Contains(cfg.Policies, p.Scheduler) {
			cfg.Policies = append(cfg.Policies, p.Scheduler)
		}
		if _, ok := rates[p.Scenario]; !ok {
			cfg.Scenarios = append(cfg.Scenarios, HeadroomScenario{Label: p.Scenario})
			loads[p.Scenario] = map[float64]float64{}
		}
		if !slices.Contains(rates[p.Scenario], p.Rate) {
			rates[p.Scenario] = append(rates[p.Scenario], p.Rate)
		}
		loads[p.Scenario][p.Rate] = p.Load
		got[key{p.Scenario, p.Scheduler, p.Rate}] = p
	}
	var out []HeadroomPoint
	for _, s := range cfg.Scenarios {
		rs := rates[s.Label]
		slices.Sort(rs)
		// The floor of a rate: from the first policy that finished there
		// (a run stopped at the bound saw fewer measured jobs).
		floor := map[float64]float64{}
		for _, pol := range slices.Backward(cfg.Policies) {
			for _, r := range rs {
				if p, ok := got[key{s.Label, pol, r}]; ok && (p.SaturatedSeeds == 0 || floor[r] == 0) {
					floor[r] = p.FloorJCT
				}
			}
		}
		for _, pol := range cfg.Policies {
			for _, r := range rs {
				p, ok := got[key{s.Label, pol, r}]
				if !ok {
					p = HeadroomPoint{Scenario: s.Label, Scheduler: pol, Rate: r, Load: loads[s.Label][r], FloorJCT: floor[r]}
				}
				out = append(out, p)
			}
		}
	}
	return cfg, out
}

// ReadHeadroomJSON reads the points of earlier `tegrl headroom --json`
// runs from files and merges them (MergeHeadroom).
func ReadHeadroomJSON(files []string) (HeadroomConfig, []HeadroomPoint, error) {
	var pts []HeadroomPoint
	for _, name := range files {
		name = strings.TrimSpace(name)
		b, err := os.ReadFile(name)
		if err != nil {
			return HeadroomConfig{}, nil, fmt.Errorf("--from-json: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		for dec.More() {
			var p HeadroomPoint
			if err := dec.Decode(&p); err != nil {
				return HeadroomConfig{}, nil, fmt.Errorf("--from-json %s: %w", name, err)
			}
			pts = append(pts, p)
		}
	}
	cfg, pts := MergeHeadroom(pts)
	return cfg, pts, nil
}

// LookaheadPolicy is the name of the clairvoyant lookahead in a headroom
// sweep's policy list.
const LookaheadPolicy = "lookahead"

// clairvoyant reports whether a point's policy knows the future (a
// bound); points read back from JSON written before the flag existed name
// the built-in bounds only.
func clairvoyant(p HeadroomPoint) bool {
	return p.Clairvoyant || p.Scheduler == LookaheadPolicy || p.Scheduler == "srtf_oracle"
}

// learned reports whether a point's policy is a non-clairvoyant learned
// policy file: it is compared with the best heuristic, not counted as one.
func learned(p HeadroomPoint) bool { return !clairvoyant(p) && env.IsPolicyFile(p.Scheduler) }

// HeadroomScenario is a cluster and a workload swept over rates or loads.
type HeadroomScenario struct {
	// Cluster is "gavel" (Spec, default Gavel's 36:36:36, 1 GPU per
	// server, gangs at consolidated throughput as in Gavel's simulator),
	// "openb" or "spot" (the node lists' servers, every Sample-th server
	// of each model when Sample > 1, gangs slowed by the table's spread
	// throughput and the cross-rack factor).
	Cluster string
	Spec    string
	Sample  int
	// Workload is "single" (Gavel's continuous-single), "multi"
	// (continuous-multiple) or "philly" (durations and GPU counts drawn
	// from the Philly distribution).
	Workload string
	Rates    []float64 // jobs per hour; when empty, Loads are converted
	Loads    []float64 // offered GPU loads
	// Label, when set, is the scenario's name (points read back from
	// JSON).
	Label string
}

// Name is "cluster-workload" ("cluster/k-workload" for a sample).
func (s HeadroomScenario) Name() string {
	if s.Label != "" {
		return s.Label
	}
	c := s.Cluster
	if s.Sample > 1 {
		c += fmt.Sprintf("/%d", s.Sample)
	}
	return c + "-" + s.Workload
}

// HeadroomConfig is a headroom sweep.
type HeadroomConfig struct {
	Scenarios []HeadroomScenario
	Policies  []string // registered policies and LookaheadPolicy
	Seeds     []uint64
	// Horizon is the lookahead's rounds per candidate (default 16);
	// Candidates its heuristics (env.LookaheadCandidates if empty).
	Horizon    int
	Candidates []string
	// On the node-list clusters the measured jobs are the MeasureJobs
	// (default 1000) that arrive after WarmupHours (default 200) of
	// arrivals; on the Gavel cluster, jobs 4000-4999 as in Gavel's
	// protocol.
	WarmupHours float64
	MeasureJobs int
	// GraceHours: a run whose measured jobs are not all done this long
	// after the last of them arrived stops at the bound (default 500,
	// three times the longest generated job on a V100; negative: no time
	// bound, as in Gavel's protocol).
	GraceHours float64
	Models     *env.GPUModels // GPU model mapping; the bundled one if nil
	Workers    int
	OnRun      func(scenario, policy string, rate float64, seed uint64, r env.RoundResult, took time.Duration)
}

// HeadroomPoint is one (scenario, policy, rate) over the seeds; its JSON
// form is a `tegrl headroom --json` line.
type HeadroomPoint struct {
	Scenario  string   `json:"scenario"`
	Scheduler string   `json:"scheduler"`
	Rate      float64  `json:"rate_jobs_per_h"`
	Load      float64  `json:"offered_gpu_load"`
	Seeds     []uint64 `json:"seeds"`
	// AvgJCT and P99JCT are means over the seeds that finished (hours);
	// nil when every seed stopped at the bound.
	AvgJCT      *float64 `json:"avg_jct_h"`
	P99JCT      *float64 `json:"p99_jct_h"`
	Utilisation float64  `json:"utilisation"`
	FloorJCT    float64  `json:"floor_jct_h"`
	// FluidJCT is the mean over the seeds of env.FluidBoundHours of the
	// measured jobs: a lower bound on any policy's long-run average JCT
	// that counts each GPU type's capacity; nil when on some seed the
	// cluster cannot keep up with the measured jobs under any allocation.
	FluidJCT       *float64 `json:"fluid_jct_h,omitempty"`
	SaturatedSeeds int      `json:"saturated_seeds"`
	// Clairvoyant marks a bound: a policy that reads jobs' remaining work
	// (env.IsClairvoyant, or the lookahead).
	Clairvoyant bool `json:"clairvoyant,omitempty"`
	// MaxSlowdown, FTFMax and FTFUnfair are means over the seeds that
	// finished of env.RunStats' largest slowdown, largest finish-time
	// fairness ρ and fraction of jobs with ρ > 1; nil as AvgJCT.
	MaxSlowdown *float64 `json:"max_slowdown,omitempty"`
	FTFMax      *float64 `json:"ftf_rho_max,omitempty"`
	FTFUnfair   *float64 `json:"ftf_unfair_frac,omitempty"`
}

type headroomRun struct {
	res   env.RoundResult
	stats env.RunStats
	fluid float64 // NaN: the cluster cannot keep up (env.ErrOverCapacity)
}

// prepared is a scenario resolved against the table.
type prepared struct {
	sc      HeadroomScenario
	cluster *env.GPUCluster
	servers [][]int
	wl      env.GavelWorkloadConfig
	rates   []float64
	loads   []float64
}

func prepare(s HeadroomScenario, tab *env.ThroughputTable, gm *env.GPUModels, philly []env.PhillySample) (prepared, error) {
	p := prepared{sc: s}
	switch s.Cluster {
	case "gavel":
		spec := s.Spec
		if spec == "" {
			spec = "36:36:36"
		}
		c, err := env.ParseGPUClusterSpec(spec, tab, 1)
		if err != nil {
			return p, err
		}
		p.cluster = c
	case "openb", "spot":
		c, err := env.NamedServerCluster(s.Cluster, tab, gm, s.Sample, 0)
		if err != nil {
			return p, err
		}
		p.cluster, p.servers = c.Cluster, c.Servers
	default:
		return p, fmt.Errorf("headroom: unknown cluster %q (gavel, openb, spot)", s.Cluster)
	}
	switch s.Workload {
	case "single":
	case "multi":
		p.wl.Multi = true
	case "philly":
		p.wl.Philly = philly
	default:
		return p, fmt.Errorf("headroom: unknown workload %q (single, multi, philly)", s.Workload)
	}
	p.rates, p.loads = s.Rates, nil
	for _, l := range s.Loads {
		if len(s.Rates) > 0 {
			break
		}
		r, err := env.RateForLoad(l, p.cluster, p.wl)
		if err != nil {
			return p, err
		}
		p.rates = append(p.rates, math.Round(r*1000)/1000)
	}
	if len(p.rates) == 0 {
		return p, fmt.Errorf("headroom %s: no rates or loads", s.Name())
	}
	for _, r := range p.rates {
		l, err := env.GPUOfferedLoad(r, p.cluster, p.wl)
		if err != nil {
			return p, err
		}
		p.loads = append(p.loads, l)
	}
	return p, nil
}

func (p prepared) run(cfg *HeadroomConfig, tab *env.ThroughputTable, policy string, rate float64, seed uint64) (headroomRun, error) {
	wl := p.wl
	wl.Rate, wl.Seed = rate, seed
	gen, err := env.NewGavelGenerator(tab, wl)
	if err != nil {
		return headroomRun{}, err
	}
	rc := p.roundConfig(cfg.WarmupHours, cfg.MeasureJobs, cfg.GraceHours, rate, seed)
	var sim *env.RoundSim
	var res env.RoundResult
	if policy == LookaheadPolicy {
		lc := env.LookaheadConfig{Candidates: cfg.Candidates, Horizon: cfg.Horizon}
		if sim, err = env.NewLookaheadSim(p.cluster, p.servers, gen, rc, lc); err != nil {
			return headroomRun{}, err
		}
		res, _, err = sim.RunLookahead(lc)
	} else {
		pol, err2 := env.AllocationPolicyByName(policy)
		if err2 != nil {
			return headroomRun{}, err2
		}
		if p.servers != nil {
			sim, err = env.NewRoundSimServers(&env.ServerCluster{Cluster: p.cluster, Servers: p.servers}, pol, gen, rc)
		} else {
			sim, err = env.NewRoundSim(p.cluster, pol, gen, rc)
		}
		if err != nil {
			return headroomRun{}, err
		}
		res, err = sim.Run()
	}
	if err != nil {
		return headroomRun{}, fmt.Errorf("headroom %s %s at %.3f jobs/h seed %d: %w", p.sc.Name(), policy, rate, seed, err)
	}
	fluid, err := sim.FluidBoundHours(rate)
	switch {
	case errors.Is(err, env.ErrOverCapacity), errors.Is(err, env.ErrNoMeasuredJobs):
		fluid = math.NaN()
	case err != nil:
		return headroomRun{}, fmt.Errorf("headroom %s at %.3f jobs/h seed %d: %w", p.sc.Name(), rate, seed, err)
	}
	return headroomRun{res: res, stats: sim.Stats(res), fluid: fluid}, nil
}

// roundConfig is the scenario's round-simulator configuration at rate:
// on the node-list clusters the measured jobs are the measure (default
// 1000) arriving after warm (default 200) hours, gangs run with locality;
// on the Gavel cluster jobs 4000-4999. A run whose measured jobs are not
// done grace hours (default 500; negative: no bound) after the last of
// them arrived is above capacity for that policy: it stops at the bound.
func (p prepared) roundConfig(warm float64, measure int, grace, rate float64, seed uint64) env.RoundConfig {
	rc := env.RoundConfig{Seed: seed}
	if p.servers != nil {
		if warm <= 0 {
			warm = 200
		}
		if measure <= 0 {
			measure = 1000
		}
		rc.Locality = true
		rc.MeasureFrom = int(math.Ceil(rate * warm))
		rc.MeasureTo = rc.MeasureFrom + measure
		rc.MaxActive = max(4000, 4*p.cluster.TotalGPUs())
	}
	if rc.MeasureTo == 0 {
		rc.MeasureFrom, rc.MeasureTo = 4000, 5000
	}
	if grace == 0 {
		grace = 500
	}
	if grace > 0 {
		rc.MaxSeconds = (float64(rc.MeasureTo)/rate + grace) * 3600
	}
	return rc
}

// RunHeadroom runs every (scenario, rate, policy, seed) in parallel and
// returns the points scenario by scenario, policies outer, rates inner.
// The results do not depend on the number of workers.
func RunHeadroom(ctx context.Context, cfg HeadroomConfig) ([]HeadroomPoint, error) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, err
	}
	gm := cfg.Models
	if gm == nil {
		gm = env.BundledGPUModels()
	}
	philly, err := env.GavelPhillyDistribution()
	if err != nil {
		return nil, err
	}
	bound := map[string]bool{LookaheadPolicy: true}
	for _, p := range cfg.Policies {
		if p == LookaheadPolicy {
			continue
		}
		pol, err := env.AllocationPolicyByName(p)
		if err != nil {
			return nil, err
		}
		bound[p] = env.IsClairvoyant(pol)
	}
	var preps []prepared
	type job struct{ sc, pol, rate, seed int }
	var jobs []job
	for si, s := range cfg.Scenarios {
		p, err := prepare(s, tab, gm, philly)
		if err != nil {
			return nil, err
		}
		preps = append(preps, p)
		for pi := range cfg.Policies {
			for ri := range p.rates {
				for k := range cfg.Seeds {
					jobs = append(jobs, job{si, pi, ri, k})
				}
			}
		}
	}
	// Longest runs first (lookahead, then high rates) to keep workers busy.
	res := make([]headroomRun, len(jobs))
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	weight := func(j job) float64 {
		w := preps[j.sc].loads[j.rate]
		if cfg.Policies[j.pol] == LookaheadPolicy {
			w += 10
		}
		return w
	}
	sortStableBy(order, func(i int) float64 { return -weight(jobs[i]) })
	err = ForEach(ctx, len(jobs), cfg.Workers, func(k int) error {
		j := jobs[order[k]]
		p, pol, rate, seed := preps[j.sc], cfg.Policies[j.pol], preps[j.sc].rates[j.rate], cfg.Seeds[j.seed]
		start := time.Now()
		out, err := p.run(&cfg, tab, pol, rate, seed)
		if err != nil {
			return err
		}
		res[order[k]] = out
		if cfg.OnRun != nil {
			cfg.OnRun(p.sc.Name(), pol, rate, seed, out.res, time.Since(start))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var pts []HeadroomPoint
	i := 0
	for _, p := range preps {
		for _, pol := range cfg.Policies {
			for ri, r := range p.rates {
				pt := summarizeHeadroom(p.sc.Name(), pol, r, p.loads[ri], cfg.Seeds, res[i:i+len(cfg.Seeds)])
				pt.Clairvoyant = bound[pol]
				pts = append(pts, pt)
				i += len(cfg.Seeds)
			}
		}
	}
	return pts, nil
}

func sortStableBy(idx []int, key func(int) float64) {
	// insertion sort keeps equal keys in order; the lists are short
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && key(idx[j]) < key(idx[j-1]); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

func summarizeHeadroom(sc, pol string, rate, load float64, seeds []uint64, runs []headroomRun) HeadroomPoint {
	p := HeadroomPoint{Scenario: sc, Scheduler: pol, Rate: rate, Load: math.Round(load*1000) / 1000, Seeds: seeds}
	var avg, p99, slow, rho, unfair []float64
	fluid := 0.0
	for _, r := range runs {
		p.FloorJCT += r.res.FloorHours / float64(len(runs))
		fluid += r.fluid / float64(len(runs))
		p.Utilisation += r.stats.Utilisation / float64(len(runs))
		if r.res.Saturated {
			p.SaturatedSeeds++
			continue
		}
		avg, p99 = append(avg, r.res.AvgJCTHours), append(p99, r.stats.P99JCTHours)
		slow, rho, unfair = append(slow, r.stats.MaxSlowdown), append(rho, r.stats.FTFMax), append(unfair, r.stats.FTFUnfair)
	}
	if !math.IsNaN(fluid) && len(runs) > 0 {
		p.FluidJCT = &fluid
	}
	if len(avg) > 0 {
		a, q, sl, rh, un := hMean(avg), hMean(p99), hMean(slow), hMean(rho), hMean(unfair)
		p.AvgJCT, p.P99JCT, p.MaxSlowdown, p.FTFMax, p.FTFUnfair = &a, &q, &sl, &rh, &un
	}
	return p
}

func hMean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// within is true when a point finished on every seed within factor× its
// floor.
func within(p HeadroomPoint, factor float64) bool {
	return p.SaturatedSeeds == 0 && p.AvgJCT != nil && *p.AvgJCT <= factor*p.FloorJCT
}

// SustainableRate is the highest rate up to which (every lower rate too)
// a policy's average JCT stays within 1.5× the floor; 0 when even the
// lowest does not. pts holds one policy's points in rate order.
func SustainableRate(pts []HeadroomPoint) float64 {
	best := 0.0
	for _, p := range pts {
		if len(p.Seeds) == 0 {
			continue // not run
		}
		if !within(p, 1.5) {
			break
		}
		best = p.Rate
	}
	return best
}

// HeadroomGap is one rate's comparison: the best non-clairvoyant policy
// against the floor and the best clairvoyant bound, and the best learned
// policy (a policy file) against both.
type HeadroomGap struct {
	Rate, Load         float64
	Floor              float64
	Fluid              float64 // the fluid bound (FluidJCT); NaN when unknown
	Best               string  // best non-clairvoyant heuristic ("" if all hit the bound)
	BestJCT            float64 // NaN when none finished
	Bound              string  // best clairvoyant policy
	BoundJCT           float64 // NaN when none finished
	GapFloor, GapBound float64 // BestJCT − Floor, BestJCT − BoundJCT (hours)
	Learned            string  // best learned policy ("" if none finished)
	LearnedJCT         float64 // NaN when none finished
	// Closed is the share of the gap to the bound the learned policy
	// closes, (BestJCT − LearnedJCT) / GapBound: 1 at the bound, above 1
	// below it, negative when worse than the best heuristic; NaN without a
	// positive gap.
	Closed float64
}

// HeadroomGaps computes the per-rate gaps of one scenario's points
// (policies outer, rates inner, as RunHeadroom returns them).
func HeadroomGaps(policies []string, pts []HeadroomPoint) []HeadroomGap {
	nr := len(pts) / len(policies)
	out := make([]HeadroomGap, nr)
	for ri := range out {
		g := HeadroomGap{Rate: pts[ri].Rate, Load: pts[ri].Load, Floor: pts[ri].FloorJCT, Fluid: math.NaN(), BestJCT: math.NaN(), BoundJCT: math.NaN(),
			LearnedJCT: math.NaN(), Closed: math.NaN()}
		if f := pts[ri].FluidJCT; f != nil {
			g.Fluid = *f
		}
		floorSet := false
		for pi, pol := range policies {
			p := pts[pi*nr+ri]
			if p.AvgJCT == nil || p.SaturatedSeeds > 0 {
				continue
			}
			if !floorSet { // a run stopped at the bound saw fewer measured jobs
				g.Floor, floorSet = p.FloorJCT, true
				g.Fluid = math.NaN()
				if p.FluidJCT != nil {
					g.Fluid = *p.FluidJCT
				}
			}
			v := *p.AvgJCT
			switch {
			case clairvoyant(p):
				if math.IsNaN(g.BoundJCT) || v < g.BoundJCT {
					g.Bound, g.BoundJCT = pol, v
				}
			case learned(p):
				if math.IsNaN(g.LearnedJCT) || v < g.LearnedJCT {
					g.Learned, g.LearnedJCT = pol, v
				}
			default:
				if math.IsNaN(g.BestJCT) || v < g.BestJCT {
					g.Best, g.BestJCT = pol, v
				}
			}
		}
		g.GapFloor, g.GapBound = g.BestJCT-g.Floor, g.BestJCT-g.BoundJCT
		if g.GapBound > 0 {
			g.Closed = (g.BestJCT - g.LearnedJCT) / g.GapBound
		}
		out[ri] = g
	}
	return out
}

func hCell(p HeadroomPoint) string {
	if len(p.Seeds) == 0 {
		return "-" // not run
	}
	if p.AvgJCT == nil || p.SaturatedSeeds == len(p.Seeds) {
		return fmt.Sprintf("bound (%.0f%%)", 100*p.Utilisation)
	}
	c := fmt.Sprintf("%.2f / %.1f / %.0f%%", *p.AvgJCT, *p.P99JCT, 100*p.Utilisation)
	if p.SaturatedSeeds > 0 {
		c += fmt.Sprintf(" (%d at bound)", p.SaturatedSeeds)
	}
	return c
}

func fnum(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteHeadroomTable writes one scenario's table in Markdown: per rate,
// the offered load, the floor, each policy's average JCT / p99 JCT
// (hours) / utilisation, the best heuristic and clairvoyant bound and the
// gaps; then each policy's sustainable rate.
func WriteHeadroomTable(w io.Writer, policies []string, pts []HeadroomPoint) error {
	var b strings.Builder
	head := append([]string{"rate (jobs/h)", "load", "floor", "fluid bound"}, policies...)
	head = append(head, "best heuristic", "best bound", "gap to floor", "gap to bound")
	nr := len(pts) / len(policies)
	withLearned := false
	for pi := range policies {
		withLearned = withLearned || learned(pts[pi*nr])
	}
	if withLearned {
		head = append(head, "best learned", "gap closed")
	}
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---:|", len(head)))
	gaps := HeadroomGaps(policies, pts)
	for ri, g := range gaps {
		row := []string{strconv.FormatFloat(g.Rate, 'f', -1, 64), fmt.Sprintf("%.2f", g.Load), fmt.Sprintf("%.2f", g.Floor), fnum(g.Fluid)}
		for pi := range policies {
			row = append(row, hCell(pts[pi*nr+ri]))
		}
		best, bound := "-", "-"
		if g.Best != "" {
			best = fmt.Sprintf("%s %.2f", g.Best, g.BestJCT)
		}
		if g.Bound != "" {
			bound = fmt.Sprintf("%s %.2f", g.Bound, g.BoundJCT)
		}
		row = append(row, best, bound, fnum(g.GapFloor), fnum(g.GapBound))
		if withLearned {
			l, c := "-", "-"
			if g.Learned != "" {
				l = fmt.Sprintf("%s %.2f", g.Learned, g.LearnedJCT)
			}
			if !math.IsNaN(g.Closed) {
				c = fmt.Sprintf("%.0f%%", 100*g.Closed)
			}
			row = append(row, l, c)
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	row := []string{"sustainable rate (JCT ≤ 1.5× floor)", "", "", ""}
	for pi := range policies {
		row = append(row, strconv.FormatFloat(SustainableRate(pts[pi*nr:(pi+1)*nr]), 'f', -1, 64))
	}
	for len(row) < len(head) {
		row = append(row, "")
	}
	fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFairnessTable writes one scenario's starvation and fairness
// figures in Markdown: per rate and policy the largest slowdown, the
// largest finish-time fairness ρ and the share of jobs with ρ > 1 (means
// over the seeds that finished).
func WriteFairnessTable(w io.Writer, policies []string, pts []HeadroomPoint) error {
	var b strings.Builder
	head := append([]string{"rate (jobs/h)"}, policies...)
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---:|", len(head)))
	nr := len(pts) / len(policies)
	for ri := 0; ri < nr; ri++ {
		row := []string{strconv.FormatFloat(pts[ri].Rate, 'f', -1, 64)}
		for pi := range policies {
			p := pts[pi*nr+ri]
			switch {
			case p.AvgJCT == nil && len(p.Seeds) > 0:
				row = append(row, "bound")
			case p.MaxSlowdown == nil || p.FTFMax == nil || p.FTFUnfair == nil:
				row = append(row, "-") // not run, or read from JSON without them
			default:
				row = append(row, fmt.Sprintf("%.0f / %.1f / %.0f%%", *p.MaxSlowdown, *p.FTFMax, 100**p.FTFUnfair))
			}
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHeadroom writes every scenario's table with a heading, and the
// largest gap to the bound of each.
func WriteHeadroom(w io.Writer, cfg HeadroomConfig, pts []HeadroomPoint) error {
	i := 0
	for _, s := range cfg.Scenarios {
		n := 0
		for i+n < len(pts) && pts[i+n].Scenario == s.Name() {
			n++
		}
		sp := pts[i : i+n]
		i += n
		if _, err := fmt.Fprintf(w, "\n### %s\n\nCells: average JCT / p99 JCT (hours) / GPU utilisation; bound: the run stopped above capacity.\n\n", s.Name()); err != nil {
			return err
		}
		if err := WriteHeadroomTable(w, cfg.Policies, sp); err != nil {
			return err
		}
		big := HeadroomGap{GapBound: math.Inf(-1)}
		for _, g := range HeadroomGaps(cfg.Policies, sp) {
			if !math.IsNaN(g.GapBound) && g.GapBound > big.GapBound {
				big = g
			}
		}
		if !math.IsInf(big.GapBound, -1) {
			if _, err := fmt.Fprintf(w, "\nLargest gap to the best bound: %.2f h at %s jobs/h (load %.2f): %s %.2f h against %s %.2f h (%.0f%% above).\n",
				big.GapBound, strconv.FormatFloat(big.Rate, 'f', -1, 64), big.Load, big.Best, big.BestJCT, big.Bound, big.BoundJCT,
				100*big.GapBound/big.BoundJCT); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "\nStarvation and fairness: largest slowdown (JCT / floor) / largest finish-time fairness ρ (JCT / JCT under an equal share) / jobs with ρ > 1.\n\n"); err != nil {
			return err
		}
		if err := WriteFairnessTable(w, cfg.Policies, sp); err != nil {
			return err
		}
	}
	return nil
}
