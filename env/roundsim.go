package env

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// RoundConfig configures the round simulator. Zero values take Gavel's
// defaults (its scheduler.py and run_sweep_continuous.py).
type RoundConfig struct {
	// RoundSeconds is the round length (Gavel's time_per_iteration, 360).
	RoundSeconds float64
	// AllocationInterval is the least simulated time between two
	// allocation recomputations (Gavel's
	// minimum_time_between_allocation_resets, 1920 s). The allocation is
	// recomputed only after a job arrived or finished.
	AllocationInterval float64
	// RestoreSeconds is the checkpoint-and-restore cost a job pays, at the
	// start of a round, when it runs on other GPUs than in the round before
	// (a preempted job resumes from its progress, minus this time). Gavel's
	// simulator charges nothing: 0.
	RestoreSeconds float64
	// Locality applies the table's spread ("_unconsolidated") throughput to
	// gangs not on one server, times CrossRackFactor for gangs spanning
	// racks. Gavel's simulator runs every gang at its consolidated
	// throughput (Locality false).
	Locality bool
	// CrossRackFactor multiplies a spread gang's throughput when its
	// servers are in more than one rack (default 0.8: a rack-level
	// oversubscription of the inter-server links; the table has no
	// cross-rack measurements).
	CrossRackFactor float64
	// Seed drives the mechanism's randomness (the per-round order of GPU
	// types for heterogeneity-agnostic policies; CPython's generator seeded
	// Seed+5, as Gavel's) and seeds SeededPolicy policies.
	Seed uint64
	// MeasureFrom and MeasureTo are the measured job IDs [from, to): the
	// run ends when they have all finished (Gavel: 4000-4999).
	MeasureFrom, MeasureTo int
	// MaxActive and MaxSeconds bound a run above capacity: it stops,
	// marked Saturated, once more jobs are active or more simulated time
	// has passed. Defaults 4000 jobs and no time bound.
	MaxActive  int
	MaxSeconds float64
	// OnAllocate, when set, sees every allocation the policy computes: its
	// input and x (read only, valid during the call). Recorders use it;
	// the run does not depend on it.
	OnAllocate func(s *RoundState, x []float64)
	// Placement names the GangPlacer that chooses the free GPUs of a gang
	// that does not keep its last round's (GangPlacerNames; "" is Gavel's
	// worker order, "gavel").
	Placement string
}

func (c *RoundConfig) fill() error {
	setDefault(&c.RoundSeconds, 360)
	setDefault(&c.AllocationInterval, 1920)
	setDefault(&c.CrossRackFactor, 0.8)
	setDefault(&c.MaxActive, 4000)
	if c.MeasureTo == 0 {
		c.MeasureFrom, c.MeasureTo = 4000, 5000
	}
	switch {
	case !(c.RoundSeconds > 0):
		return fmt.Errorf("round config: round length must be positive, got %v", c.RoundSeconds)
	case !(c.AllocationInterval > 0) || math.IsInf(c.AllocationInterval, 0):
		return fmt.Errorf("round config: allocation interval must be a positive number of seconds, got %v", c.AllocationInterval)
	case c.RestoreSeconds < 0 || c.RestoreSeconds >= c.RoundSeconds:
		return fmt.Errorf("round config: restore cost %v s must be in [0, round length)", c.RestoreSeconds)
	case c.CrossRackFactor <= 0 || c.CrossRackFactor > 1:
		return fmt.Errorf("round config: cross-rack factor %v must be in (0, 1]", c.CrossRackFactor)
	case c.MeasureFrom < 0 || c.MeasureTo <= c.MeasureFrom:
		return fmt.Errorf("round config: measured jobs [%d, %d) is empty", c.MeasureFrom, c.MeasureTo)
	}
	if _, err := GangPlacerByName(c.Placement); err != nil {
		return fmt.Errorf("round config: %w", err)
	}
	return nil
}

// RoundResult is the outcome of one round-simulator run.
type RoundResult struct {
	// JCT holds the measured jobs' completion times (seconds, finish minus
	// arrival) in ID order; only complete when !Saturated.
	JCT         []float64
	AvgJCTHours float64 // mean of JCT in hours (NaN when Saturated)
	// FloorHours is the mean over the measured jobs of each one's run time
	// alone on its best allocation (fastest GPU type, consolidated).
	FloorHours float64
	Saturated  bool    // stopped at MaxActive or MaxSeconds
	Rounds     int     // rounds simulated
	SimSeconds float64 // simulated time at the end
	Jobs       int     // jobs that arrived
	Moves      int     // rounds in which a running job changed GPUs
}

// P99JCTHours is the 99th percentile (nearest rank) of r's measured JCTs
// in hours; NaN when r is saturated or measured no job.
func (r RoundResult) P99JCTHours() float64 {
	if r.Saturated || len(r.JCT) == 0 {
		return math.NaN()
	}
	v := slices.Clone(r.JCT)
	slices.Sort(v)
	k := int(math.Ceil(0.99*float64(len(v)))) - 1
	return v[max(k, 0)] / 3600
}

// JobSource yields jobs in arrival order.
type JobSource interface {
	Next() DLJob
}

// ClusterChecker is a job source that can tell before the run whether
// every job it may yield fits the cluster (GavelGenerator: its gang sizes).
type ClusterChecker interface {
	CheckCluster(c *GPUCluster) error
}

const noWorker = -1

type rjob struct {
	DLJob
	done     float64 // steps done
	finish   float64
	attained float64 // GPU-seconds
	active   bool
	schedAt  int // round in which it was last picked
}

// entry is a schedulable unit: a single job (b < 0) or a co-located pair.
type entry struct {
	a, b      int
	alloc     []float64 // per cluster type
	time      []float64 // Gavel's job_time_so_far
	deficit   []float64
	tp        []float64 // steps/s per type alone or as a pair: a's, then b's
	hasAlloc  bool
	thr       [2]float64
	steps     [2]float64
	finish    float64
	restore   float64
	prevRound int   // round in which it last ran
	prevType  int   // type index it last ran on
	wk        []int // its gang: this round's workers, or the last ones
	prevWk    []int
	kept      bool
	curType   int
}

// RoundSim is the round-based GPU cluster simulator after Gavel's: every
// round the policy's allocation (recomputed at most every
// AllocationInterval) is turned into gangs of GPUs by priority
// allocation / share of time received, jobs keep their GPUs when they can
// (leases), and a job that finishes mid-round frees its GPUs at the round's
// end. RoundSim allocates nothing per round once its buffers have grown.
type RoundSim struct {
	c      *GPUCluster
	cfg    RoundConfig
	pol    AllocationPolicy
	pack   PackingPolicy
	cons   ConsolidatingPolicy
	hints  RoundHints
	placer GangPlacer
	src    JobSource
	rng    *pyRandom
	nt     int
	order  []int // cluster type indices, fastest first
	round  []int // this round's order
	pend   DLJob
	jobs   []rjob
	active []int   // job IDs, arrival order
	sEnt   []entry // one per job ID
	pairs  []entry // co-located pairs of the current allocation
	pairDf map[[2]int]*entry

	workerTime []float64 // per type
	lastReset  float64
	needUpdate bool

	// workers: per type, servers of worker IDs; worker -> server, rack
	servers    [][][]int
	workerSrv  []int
	workerRack []int
	workerStmp []int
	cursor     [][]int // per type and server, sized by layoutServers (placement counts srvFree)

	// placement, per type: free GPUs per server this round, each server's
	// rack within the type, the type's first global server and its racks,
	// the first server that may have free GPUs; take is the placer's
	// answer, typical the round's most common gang size.
	srvFree  [][]int
	srvRack  [][]int
	srvBase  []int
	srvRacks []int
	srvLo    []int
	take     []PlaceTake
	preq     PlaceRequest
	typical  int
	scaleCnt []int

	// check, when set (tests), is called after each round's placement.
	check func()

	// scratch
	queue       []qent
	sched       [][]*entry
	left        []int
	state       RoundState
	x           []float64
	running     []*entry
	now         float64
	roundStart  float64
	rounds      int
	res         RoundResult
	measureDone int
}

type qent struct {
	e   *entry
	key [3]float64
	ord int
}

// NewRoundSim prepares a run of policy pol on cluster c with jobs from src.
func NewRoundSim(c *GPUCluster, pol AllocationPolicy, src JobSource, cfg RoundConfig) (*RoundSim, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if c == nil || pol == nil || src == nil {
		return nil, errors.New("round simulator: nil cluster, policy or job source")
	}
	if w, ok := src.(ClusterChecker); ok {
		if err := w.CheckCluster(c); err != nil {
			return nil, err
		}
	}
	s := &RoundSim{c: c, cfg: cfg, pol: pol, src: src, nt: len(c.Types), pairDf: map[[2]int]*entry{},
		rng: newPyRandom(cfg.Seed + 5)}
	s.pack, _ = pol.(PackingPolicy)
	s.cons, _ = pol.(ConsolidatingPolicy)
	s.placer, _ = GangPlacerByName(cfg.Placement)
	if sp, ok := pol.(SeededPolicy); ok {
		sp.Seed(cfg.Seed)
	}
	if h, ok := pol.(RoundHintsPolicy); ok {
		s.hints = h.RoundHints()
	}
	s.layout()
	s.state.Types = make([]string, s.nt)
	s.state.Capacity = append([]int(nil), c.Capacity...)
	for i, g := range c.Types {
		s.state.Types[i] = c.Table.GPUs[g]
	}
	s.state.Pair = s.pairThroughput
	s.pend = src.Next()
	s.left = make([]int, s.nt)
	s.sched = make([][]*entry, s.nt)
	s.workerTime = make([]float64, s.nt)
	s.round = make([]int, s.nt)
	return s, nil
}

// layout numbers the workers type by type in name order (as Gavel
// registers them), servers of GPUsPerServer, racks of ServersPerRack
// servers, and orders the types fastest first by mean throughput.
func (s *RoundSim) layout() {
	c := s.c
	sizes := make([][]int, s.nt)
	for i := range c.Types {
		per := c.GPUsPerServer[i]
		for k := 0; k < c.Capacity[i]/per; k++ {
			sizes[i] = append(sizes[i], per)
		}
	}
	s.layoutServers(sizes)
	mean := make([]float64, s.nt)
	for i, g := range c.Types {
		for m := range c.Table.Models {
			mean[i] += c.Table.Throughput(m, g, 1, false)
		}
	}
	s.order = make([]int, s.nt)
	for i := range s.order {
		s.order[i] = i
	}
	slices.SortStableFunc(s.order, func(a, b int) int {
		switch {
		case mean[a] > mean[b]:
			return -1
		case mean[a] < mean[b]:
			return 1
		}
		return 0
	})
}

func (s *RoundSim) pairThroughput(i, k, j int) (float64, float64, bool) {
	a, b := &s.state.Jobs[i], &s.state.Jobs[k]
	if a.Scale != b.Scale {
		return 0, 0, false
	}
	return s.c.Table.PairThroughput(a.Type, b.Type, s.c.Types[j], a.Scale)
}

// Run simulates until the measured jobs have finished or a bound is hit.
func (s *RoundSim) Run() (RoundResult, error) {
	cfg := &s.cfg
	for s.measureDone < cfg.MeasureTo-cfg.MeasureFrom {
		if len(s.running) > 0 {
			s.now = s.running[0].finish
			for _, e := range s.running[1:] {
				s.now = math.Max(s.now, e.finish)
			}
			s.endRound()
		} else if t := s.lastReset + s.cfg.AllocationInterval; len(s.active) > 0 && s.needUpdate && t > s.now && t < s.pend.Arrival {
			// Nothing runs under the stale allocation (jobs it gave no
			// share wait): idle until it may be recomputed.
			s.now = t
		} else if s.pend.Arrival > s.now {
			if math.IsInf(s.pend.Arrival, 1) {
				s.res.Saturated = true // nothing runs and nothing will arrive
				break
			}
			s.now = s.pend.Arrival
		}
		for s.pend.Arrival <= s.now {
			if err := s.arrive(); err != nil {
				return s.result(), err
			}
		}
		if len(s.active) > cfg.MaxActive || (cfg.MaxSeconds > 0 && s.now > cfg.MaxSeconds) {
			s.res.Saturated = true
			break
		}
		if err := s.startRound(); err != nil {
			return s.res, err
		}
	}
	return s.result(), nil
}

func (s *RoundSim) result() RoundResult {
	r := &s.res
	r.Rounds, r.SimSeconds, r.Jobs = s.rounds, s.now, len(s.jobs)
	n := s.cfg.MeasureTo - s.cfg.MeasureFrom
	r.JCT = make([]float64, 0, n)
	floor, sum := 0.0, 0.0
	for id := s.cfg.MeasureFrom; id < s.cfg.MeasureTo && id < len(s.jobs); id++ {
		j := &s.jobs[id]
		best := s.bestThroughput(j)
		floor += j.Steps / best
		if !j.active && j.done > 0 {
			r.JCT = append(r.JCT, j.finish-j.Arrival)
			sum += j.finish - j.Arrival
		}
	}
	r.FloorHours = floor / float64(min(n, max(len(s.jobs)-s.cfg.MeasureFrom, 1))) / 3600
	r.AvgJCTHours = math.NaN()
	if !r.Saturated {
		r.AvgJCTHours = sum / float64(len(r.JCT)) / 3600
	}
	return *r
}

// bestThroughput is a job's steps/s alone on its fastest type of the
// cluster, consolidated: the rate of its zero-wait floor.
func (s *RoundSim) bestThroughput(j *rjob) float64 {
	best := 0.0
	for _, g := range s.c.Types {
		best = math.Max(best, s.c.Table.Throughput(j.Model, g, j.Scale, false))
	}
	return best
}

func (s *RoundSim) newEntry(a, b, scale int) entry {
	row := make([]float64, 5*s.nt)
	wk := make([]int, 2*scale)
	e := entry{a: a, b: b, alloc: row[:s.nt], time: row[s.nt : 2*s.nt], deficit: row[2*s.nt : 3*s.nt],
		tp: row[3*s.nt:], prevRound: -2, prevType: -1, wk: wk[:scale], prevWk: wk[scale:]}
	for t, g := range s.c.Types {
		ja := &s.jobs[a]
		if b < 0 {
			e.tp[t] = s.c.Table.Throughput(ja.Model, g, ja.Scale, false)
		} else if ta, tb, ok := s.c.Table.PairThroughput(ja.Model, s.jobs[b].Model, g, ja.Scale); ok {
			e.tp[t], e.tp[s.nt+t] = ta, tb
		}
	}
	return e
}

// arrive admits the pending job; a gang the cluster can never place is an
// error (it would wait forever), not a smaller gang.
func (s *RoundSim) arrive() error {
	j := s.pend
	j.ID = len(s.jobs)
	if err := s.c.CheckGang(j); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	s.jobs = append(s.jobs, rjob{DLJob: j, active: true, schedAt: -1})
	s.sEnt = append(s.sEnt, s.newEntry(j.ID, -1, j.Scale))
	e := &s.sEnt[j.ID]
	for t := range s.nt {
		e.time[t] = s.cfg.RoundSeconds / 2
	}
	s.active = append(s.active, j.ID)
	s.needUpdate = true
	s.pend = s.src.Next()
	s.pend.ID = len(s.jobs)
	return nil
}

// typeOfWorker is the cluster type index of worker w.
func (s *RoundSim) typeOfWorker(w int) int {
	for t, srv := range s.servers {
		for _, ids := range srv {
			for _, id := range ids {
				if id == w {
					return t
				}
			}
		}
	}
	return -1
}

func (s *RoundSim) scaleOf(e *entry) int { return s.jobs[e.a].Scale }

// throughputOn is e's steps/s alone (or as a pair) on type t,
// consolidated; for a pair, both jobs' rates.
func (s *RoundSim) throughputOn(e *entry, t int) (float64, float64) {
	return e.tp[t], e.tp[s.nt+t]
}

func (s *RoundSim) live(e *entry) bool {
	return s.jobs[e.a].active && (e.b < 0 || s.jobs[e.b].active)
}

// reset is Gavel's _reset_time_run_so_far: each entry's deficit grows by
// the time it should have received under the old allocation minus the
// time it received, and the time counters restart at half a round.
func (s *RoundSim) reset() {
	elapsed := s.now - s.lastReset
	half := s.cfg.RoundSeconds / 2
	clear(s.workerTime)
	upd := func(e *entry) {
		for t := range s.nt {
			should := 0.0
			if e.hasAlloc {
				should = e.alloc[t] * elapsed
			}
			e.deficit[t] += should - (e.time[t] - half)
			e.time[t] = half
			s.workerTime[t] += half
		}
	}
	for _, id := range s.active {
		upd(&s.sEnt[id])
	}
	for i := range s.pairs {
		if s.live(&s.pairs[i]) {
			upd(&s.pairs[i])
		}
	}
	s.lastReset = s.now
}

// reallocate asks the policy for a new allocation when a job arrived or
// finished and AllocationInterval has passed since the last one.
func (s *RoundSim) reallocate() error {
	if !s.needUpdate || !(s.now-s.lastReset >= s.cfg.AllocationInterval || s.lastReset == 0) {
		return nil
	}
	s.reset()
	if len(s.active) == 0 {
		s.needUpdate = false // Gavel: an empty allocation
		return nil
	}
	st := &s.state
	st.Time = s.now
	st.Jobs = st.Jobs[:0]
	st.Throughput = st.Throughput[:0]
	for _, id := range s.active {
		j := &s.jobs[id]
		st.Jobs = append(st.Jobs, RoundJob{ID: id, Type: j.Model, Scale: j.Scale, Arrival: j.Arrival,
			StepsTotal: j.Steps, StepsLeft: j.Steps - j.done, Attained: j.attained, Priority: j.Priority})
		for _, g := range s.c.Types {
			st.Throughput = append(st.Throughput, s.c.Table.Throughput(j.Model, g, j.Scale, false))
		}
	}
	n := len(st.Jobs) * s.nt
	if cap(s.x) < n {
		s.x = make([]float64, n, 2*n)
	}
	s.x = s.x[:n]
	clear(s.x)
	if err := s.pol.Allocate(st, s.x); err != nil {
		return fmt.Errorf("policy %s at %.0f s: %w", s.pol.Name(), s.now, err)
	}
	if s.cfg.OnAllocate != nil {
		s.cfg.OnAllocate(st, s.x)
	}
	for i, id := range s.active {
		e := &s.sEnt[id]
		copy(e.alloc, s.x[i*s.nt:(i+1)*s.nt])
		e.hasAlloc = true
	}
	if s.pack != nil {
		s.repair(s.pack.Pairs(st))
	}
	s.needUpdate = false
	return nil
}

// repair replaces the pair entries by the policy's, keeping the deficits,
// time counters and leases of pairs that stay.
func (s *RoundSim) repair(ps []RoundPair) {
	clear(s.pairDf)
	for i := range s.pairs {
		e := &s.pairs[i]
		if s.live(e) {
			s.pairDf[[2]int{e.a, e.b}] = e
		}
	}
	old := s.pairs
	s.pairs = make([]entry, 0, len(ps))
	for _, p := range ps {
		a, b := min(p.A, p.B), max(p.A, p.B)
		if a == b || a < 0 || b >= len(s.jobs) || !s.jobs[a].active || !s.jobs[b].active || s.jobs[a].Scale != s.jobs[b].Scale {
			continue
		}
		var e entry
		if o, ok := s.pairDf[[2]int{a, b}]; ok {
			e = *o
		} else {
			e = s.newEntry(a, b, s.jobs[a].Scale)
			for t := range s.nt {
				e.time[t] = s.cfg.RoundSeconds / 2
			}
		}
		for t := range s.nt {
			e.alloc[t] = 0
			if t < len(p.X) {
				e.alloc[t] = p.X[t]
			}
		}
		e.hasAlloc = true
		s.pairs = append(s.pairs, e)
	}
	_ = old
}

// priority is Gavel's: allocation / (share of the type's time received),
// allocation·1e9 before any time was counted, 0 without an allocation.
func (s *RoundSim) priority(e *entry, t int) float64 {
	if !e.hasAlloc || e.alloc[t] == 0 {
		return 0
	}
	ta, tb := s.throughputOn(e, t)
	if ta <= 0 || (e.b >= 0 && tb <= 0) {
		return 0
	}
	frac := 0.0
	if s.workerTime[t] != 0 {
		frac = e.time[t] / s.workerTime[t]
	}
	if frac > 0 {
		return e.alloc[t] / frac
	}
	return e.alloc[t] * 1e9
}

func cmpQueue(a, b qent) int {
	for k := range a.key {
		if a.key[k] != b.key[k] {
			if a.key[k] > b.key[k] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (s *RoundSim) picked(id int) bool { return s.jobs[id].schedAt == s.rounds }

// pick is the selection step of Gavel's _schedule_jobs_on_workers for one type: entries in
// priority order (priority, deficit, allocation, descending; ties in
// arrival order) take the type's GPUs while they fit. Only the head of the
// order is needed, so the entries go into a heap and are popped until the
// type is full.
//
// A backfill pick (after a consolidated gang waited, see assign) takes
// the GPUs left in the same order, entries without an allocation on the
// type included even under SkipUnallocated (the policy meant these GPUs
// to be used), entries never allocated excluded.
func (s *RoundSim) pick(t int, backfill bool) {
	q := s.queue[:0]
	add := func(e *entry) {
		k := [3]float64{s.priority(e, t), e.deficit[t], allocOf(e, t)}
		if backfill && !e.hasAlloc {
			return
		}
		if !backfill && s.hints.SkipUnallocated && k[0] <= 0 && !(s.hints.Upgrade && s.upgrades(e, t)) {
			return // never picked: Gavel's FIFO skips zero priorities
		}
		q = append(q, qent{e: e, key: k, ord: len(q)})
	}
	for _, id := range s.active {
		add(&s.sEnt[id])
	}
	for i := range s.pairs {
		if s.live(&s.pairs[i]) {
			add(&s.pairs[i])
		}
	}
	s.queue = q
	for i := len(q)/2 - 1; i >= 0; i-- {
		siftDown(q, i)
	}
	for len(q) > 0 && s.left[t] > 0 {
		e := q[0].e
		q[0] = q[len(q)-1]
		q = q[:len(q)-1]
		siftDown(q, 0)
		if s.picked(e.a) || (e.b >= 0 && s.picked(e.b)) {
			continue
		}
		if ta, tb := s.throughputOn(e, t); ta <= 0 || (e.b >= 0 && tb <= 0) {
			continue
		}
		sc := s.scaleOf(e)
		if sc > s.left[t] {
			continue
		}
		s.left[t] -= sc
		s.jobs[e.a].schedAt = s.rounds
		if e.b >= 0 {
			s.jobs[e.b].schedAt = s.rounds
		}
		s.sched[t] = append(s.sched[t], e)
	}
}

// before orders the queue: higher keys first, then earlier entries.
func before(a, b *qent) bool {
	if c := cmpQueue(*a, *b); c != 0 {
		return c < 0
	}
	return a.ord < b.ord
}

func siftDown(q []qent, i int) {
	for {
		l := 2*i + 1
		if l >= len(q) {
			return
		}
		m := l
		if r := l + 1; r < len(q) && before(&q[r], &q[l]) {
			m = r
		}
		if !before(&q[m], &q[i]) {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}

// upgrades reports whether single entry e runs faster on type t than on
// every type it was allocated (RoundHints.Upgrade).
func (s *RoundSim) upgrades(e *entry, t int) bool {
	if !e.hasAlloc || e.b >= 0 {
		return false
	}
	best := 0.0
	for u, a := range e.alloc {
		if a > 0 {
			best = max(best, e.tp[u])
		}
	}
	return best > 0 && e.tp[t] > best
}

func allocOf(e *entry, t int) float64 {
	if !e.hasAlloc {
		return 0
	}
	return e.alloc[t]
}

func (s *RoundSim) startRound() error {
	if err := s.reallocate(); err != nil {
		return err
	}
	copy(s.round, s.order)
	if s.hints.ShuffleTypes {
		s.rng.shuffle(s.round)
	}
	copy(s.left, s.c.Capacity)
	for _, t := range s.round {
		s.sched[t] = s.sched[t][:0]
		s.pick(t, false)
	}
	s.resetPlacement()
	s.running = s.running[:0]
	for _, t := range s.round {
		if err := s.assign(t); err != nil {
			return err
		}
	}
	if s.check != nil {
		s.check()
	}
	s.roundStart = s.now
	s.rounds++
	return nil
}

// assign is the placement half of Gavel's _schedule_jobs_on_workers for
// one type: gangs from the largest scale factor down; a gang that ran on
// this type last round keeps its GPUs when none was taken yet (a lease);
// the others take free GPUs where the placer (RoundConfig.Placement)
// chooses, Gavel's being server by server in worker order.
//
// A gang the policy consolidates (ConsolidatingPolicy, with Locality)
// takes GPUs of one server only; when no server has the gang free it waits
// this round, its GPUs go back to the type, and the type is picked again
// (a backfill) for the jobs behind it.
func (s *RoundSim) assign(t int) error {
	start := 0
	for {
		waited, err := s.assignGangs(t, s.sched[t][start:])
		if err != nil || !waited {
			return err
		}
		start = len(s.sched[t])
		s.pick(t, true)
		if len(s.sched[t]) == start {
			return nil
		}
	}
}

func (s *RoundSim) assignGangs(t int, list []*entry) (waited bool, err error) {
	slices.SortStableFunc(list, func(a, b *entry) int { return s.scaleOf(b) - s.scaleOf(a) })
	r := s.rounds
	for i := 0; i < len(list); {
		sc := s.scaleOf(list[i])
		end := i
		for end < len(list) && s.scaleOf(list[end]) == sc {
			end++
		}
		group := list[i:end]
		for _, e := range group {
			e.kept = false
			if e.prevRound != r-1 || e.prevType != t {
				continue
			}
			free := true
			for _, w := range e.prevWk {
				free = free && s.workerStmp[w] != r
			}
			if free {
				for _, w := range e.prevWk {
					s.takeWorker(t, w)
				}
				copy(e.wk, e.prevWk)
				e.kept = true
			}
		}
		for _, e := range group {
			if !e.kept {
				if !e.hasAlloc {
					continue // Gavel reserves the GPUs but runs nothing on them
				}
				one := s.mustConsolidate(e, t)
				if !s.placeGang(e, t, sc, one) {
					if one {
						waited = true
						s.left[t] += sc
						continue
					}
					return waited, fmt.Errorf("round %d: no %d free %s GPUs for job %d", r, sc, s.state.Types[t], e.a)
				}
			}
			s.launch(e, t)
		}
		i = end
	}
	return waited, nil
}

// mustConsolidate reports whether the policy runs e's gang on type t only
// on one server: with Locality, for gangs of two or more GPUs, when either
// job's table throughputs make the policy say so.
func (s *RoundSim) mustConsolidate(e *entry, t int) bool {
	sc := s.scaleOf(e)
	if s.cons == nil || !s.cfg.Locality || sc < 2 {
		return false
	}
	g := s.c.Types[t]
	for _, id := range [2]int{e.a, e.b} {
		if id < 0 {
			continue
		}
		m := s.jobs[id].Model
		if s.cons.MustConsolidate(s.c.Table.Throughput(m, g, sc, false), s.c.Table.Throughput(m, g, sc, true)) {
			return true
		}
	}
	return false
}

// resetPlacement frees every server for the round's placement and finds
// its most common gang size (the smaller on ties).
func (s *RoundSim) resetPlacement() {
	if s.srvFree == nil {
		s.initPlacement()
	}
	for t, srv := range s.servers {
		for k, ids := range srv {
			s.srvFree[t][k] = len(ids)
		}
		s.srvLo[t] = 0
	}
	clear(s.scaleCnt)
	for _, id := range s.active {
		sc := s.jobs[id].Scale
		if sc >= len(s.scaleCnt) {
			s.scaleCnt = slices.Grow(s.scaleCnt, sc+1-len(s.scaleCnt))[:sc+1]
		}
		s.scaleCnt[sc]++
	}
	s.typical = 1
	for sc, n := range s.scaleCnt {
		if n > s.scaleCnt[s.typical] {
			s.typical = sc
		}
	}
}

// initPlacement sizes the placement buffers to the server layout (which
// NewRoundSimServers may replace after NewRoundSim).
func (s *RoundSim) initPlacement() {
	s.srvFree = make([][]int, s.nt)
	s.srvRack = make([][]int, s.nt)
	s.srvBase = make([]int, s.nt)
	s.srvRacks = make([]int, s.nt)
	s.srvLo = make([]int, s.nt)
	for t, srv := range s.servers {
		s.srvFree[t] = make([]int, len(srv))
		s.srvRack[t] = make([]int, len(srv))
		if len(srv) == 0 {
			continue
		}
		s.srvBase[t] = s.workerSrv[srv[0][0]]
		first := s.workerRack[srv[0][0]]
		for k, ids := range srv {
			s.srvRack[t][k] = s.workerRack[ids[0]] - first
			s.srvRacks[t] = s.srvRack[t][k] + 1
		}
	}
	s.scaleCnt = make([]int, 2)
}

// takeWorker marks worker w of type t taken this round.
func (s *RoundSim) takeWorker(t, w int) {
	s.workerStmp[w] = s.rounds
	s.srvFree[t][s.workerSrv[w]-s.srvBase[t]]--
}

// placeGang gives e's gang of sc GPUs the free GPUs the placer chooses
// (on one server when one is set), the first free ones of each server it
// takes from; false when there is no such placement.
func (s *RoundSim) placeGang(e *entry, t, sc int, one bool) bool {
	free := s.srvFree[t]
	lo := s.srvLo[t]
	for lo < len(free) && free[lo] == 0 {
		lo++
	}
	s.srvLo[t] = lo
	req := &s.preq
	*req = PlaceRequest{GPUs: sc, Typical: s.typical, Free: free[lo:], Rack: s.srvRack[t][lo:],
		Racks: s.srvRacks[t], OneServer: one}
	var ok bool
	if s.take, ok = s.placer.Place(req, s.take[:0]); !ok {
		return false
	}
	n := 0
	for _, tk := range s.take {
		m := tk.GPUs
		for _, w := range s.servers[t][lo+tk.Server] {
			if m == 0 {
				break
			}
			if s.workerStmp[w] != s.rounds {
				s.takeWorker(t, w)
				e.wk[n] = w
				n++
				m--
			}
		}
	}
	return n == sc
}

// gangFactor is the throughput multiplier of a gang on workers wk for job
// type m at scale sc on cluster type t: 1 on one server; the table's
// spread/consolidated ratio across servers; times CrossRackFactor across
// racks. Always 1 without Locality.
func (s *RoundSim) gangFactor(wk []int, m, sc, t int) float64 {
	if !s.cfg.Locality || len(wk) < 2 {
		return 1
	}
	oneServer, oneRack := true, true
	for _, w := range wk[1:] {
		oneServer = oneServer && s.workerSrv[w] == s.workerSrv[wk[0]]
		oneRack = oneRack && s.workerRack[w] == s.workerRack[wk[0]]
	}
	if oneServer {
		return 1
	}
	g := s.c.Types[t]
	cons := s.c.Table.Throughput(m, g, sc, false)
	if cons <= 0 {
		return 0
	}
	f := s.c.Table.Throughput(m, g, sc, true) / cons
	if !oneRack {
		f *= s.cfg.CrossRackFactor
	}
	return f
}

func (s *RoundSim) stepsFor(id int, thr, avail float64) float64 {
	j := &s.jobs[id]
	rem := j.Steps - j.done
	n := math.Min(math.Floor(thr*avail), rem)
	if n <= 0 {
		n = math.Min(rem, thr*avail)
	}
	return n
}

// launch starts e on its gang for this round.
func (s *RoundSim) launch(e *entry, t int) {
	ta, tb := s.throughputOn(e, t)
	sc := s.scaleOf(e)
	ta *= s.gangFactor(e.wk, s.jobs[e.a].Model, sc, t)
	if e.b >= 0 {
		tb *= s.gangFactor(e.wk, s.jobs[e.b].Model, sc, t)
	}
	e.restore = 0
	if !e.kept && s.jobs[e.a].done > 0 {
		s.res.Moves++
		e.restore = s.cfg.RestoreSeconds
	}
	avail := s.cfg.RoundSeconds - e.restore
	e.curType, e.thr = t, [2]float64{ta, tb}
	e.steps[0] = s.stepsFor(e.a, ta, avail)
	e.finish = s.now + e.restore
	if ta > 0 {
		e.finish += e.steps[0] / ta
	}
	if e.b >= 0 {
		e.steps[1] = s.stepsFor(e.b, tb, avail)
		e.finish = math.Max(e.finish, s.now+e.restore+e.steps[1]/tb)
	}
	s.running = append(s.running, e)
}

// endRound books the round's progress; jobs that finished leave at their
// own finish time (their GPUs idle until the round ends).
func (s *RoundSim) endRound() {
	r := s.rounds - 1
	finished := false
	for _, e := range s.running {
		exec := e.finish - s.roundStart
		t := e.curType
		sc := float64(s.scaleOf(e))
		for k, id := range [2]int{e.a, e.b} {
			if id < 0 {
				continue
			}
			j := &s.jobs[id]
			j.done += e.steps[k]
			j.attained += exec * sc
			if j.Steps-j.done <= 1e-9*j.Steps {
				j.active, j.finish, finished = false, e.finish, true
				if id >= s.cfg.MeasureFrom && id < s.cfg.MeasureTo {
					s.measureDone++
				}
			}
		}
		e.time[t] += exec
		s.workerTime[t] += exec
		e.prevRound, e.prevType = r, t
		copy(e.prevWk, e.wk)
	}
	s.running = s.running[:0]
	if finished {
		s.needUpdate = true
		k := 0
		for _, id := range s.active {
			if s.jobs[id].active {
				s.active[k] = id
				k++
			}
		}
		s.active = s.active[:k]
	}
}
