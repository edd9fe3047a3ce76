package env

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// SimConfig parameterises a simulation run. The zero value of a field means
// its default (see DefaultSimConfig).
type SimConfig struct {
	Seed uint64
	// Tick is the length of one step in seconds.
	Tick float64
	// Duration stops the run at this simulated time (s); 0 runs until every
	// job has arrived and left the system, bounded by MaxTicks.
	Duration float64
	// MaxTicks bounds the number of steps (0: 10 million).
	MaxTicks int
	// MTBF and MTTR are a machine's mean time between failures and to
	// repair, in seconds (exponential). MTBF < 0 disables failures.
	MTBF, MTTR float64
	// ScanLimit bounds the queued jobs offered to the scheduler per tick,
	// which keeps a tick's cost independent of the backlog. The default, 1024
	// per 10 s tick, is about kube-scheduler's throughput (~100 pods/s).
	ScanLimit int
	// StarveAfter: a job that waits longer than this (s) is starved.
	StarveAfter float64
	// MaxRestarts: a job killed (failure, OOM) more often than this fails.
	MaxRestarts int
	// FragEvery samples GPU fragmentation every this many ticks.
	FragEvery int
	// TEG configures the Thermo-Economic Governor's mechanisms; nil means
	// GovernorFor(scheduler).
	TEG *TEGConfig
	// Series records job outcomes and a sampled time series (series.go);
	// off by default.
	Series SeriesConfig
}

// DefaultSimConfig holds the defaults: 10 s ticks, machines failing once a
// month on average and repaired in an hour, up to 1024 scheduling attempts
// per tick.
var DefaultSimConfig = SimConfig{
	Tick:        10,
	MaxTicks:    10_000_000,
	MTBF:        30 * 86400,
	MTTR:        3600,
	ScanLimit:   1024,
	StarveAfter: 3600,
	MaxRestarts: 3,
	FragEvery:   6,
}

func (c *SimConfig) fill() error {
	d := DefaultSimConfig
	setDefault(&c.Tick, d.Tick)
	setDefault(&c.MaxTicks, d.MaxTicks)
	setDefault(&c.MTBF, d.MTBF)
	setDefault(&c.MTTR, d.MTTR)
	setDefault(&c.ScanLimit, d.ScanLimit)
	setDefault(&c.StarveAfter, d.StarveAfter)
	setDefault(&c.MaxRestarts, d.MaxRestarts)
	setDefault(&c.FragEvery, d.FragEvery)
	switch {
	case !(c.Tick > 0) || math.IsInf(c.Tick, 0):
		return fmt.Errorf("tick %v s must be positive", c.Tick)
	case c.Duration < 0 || math.IsNaN(c.Duration) || math.IsInf(c.Duration, 0):
		return fmt.Errorf("duration %v s must be >= 0", c.Duration)
	case c.MaxTicks < 0:
		return fmt.Errorf("max ticks %d must be >= 0", c.MaxTicks)
	case math.IsNaN(c.MTBF) || (c.MTBF > 0 && !(c.MTTR > 0)):
		return fmt.Errorf("MTBF %v / MTTR %v invalid", c.MTBF, c.MTTR)
	case c.ScanLimit < 0 || c.StarveAfter < 0 || c.MaxRestarts < 0 || c.FragEvery < 0:
		return fmt.Errorf("negative limit in %+v", *c)
	}
	return c.Series.validate()
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// jobState tracks one job through the system.
type jobState uint8

const (
	notArrived jobState = iota
	queued
	running
	completed
	failed
	cancelled // a replica removed by a scale-down action
)

type jobRec struct {
	state     jobState
	restarts  int     // kills by failure or OOM
	starts    uint32  // number of starts (hash input of the usage model)
	seq       uint32  // version of its completion entry
	useVer    uint32  // version of its memory plateau entry
	queuedAt  float64 // last time it entered the queue
	firstRun  float64 // first start time (-1 before)
	start     float64 // current run's start
	end       float64 // current run's planned end
	work      float64 // nominal seconds of work left at mark
	rate      float64 // progress per second now
	mark      float64 // time work was last brought up to date (or resumes)
	alloc     Alloc
	use       usage
	saturated bool
	starved   bool
	judged    bool // SLA decided (services at start)
	// waitEpoch is Sim.epoch+1 when the scheduler last answered Wait; the
	// job is not offered again until capacity has been freed since.
	waitEpoch uint64
	tenant    int32 // dense tenant index
	migrIdx   int32 // position in Sim.migr, -1 when absent
}

// event is a machine failure or recovery.
type event struct {
	t       float64
	machine int
	up      bool
}

// timed is a job (or machine) event tagged with the version it was
// scheduled for; stale entries are skipped when they surface, which keeps
// rescheduling O(log n) without deletions.
type timed struct {
	t   float64
	id  int32
	ver uint32
}

func timedLess(a, b timed) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.id < b.id
}

// fragCache is a machine's fragmentation and the version it is valid for.
type fragCache struct {
	val float64
	ver uint32
}

// onMachCap is the preallocated capacity of each machine's job list.
const onMachCap = 32

// pushJob appends a running job to machine i's list, moving the list to a
// block twice as large when it is full.
func (s *Sim) pushJob(i int, id int32) {
	l := s.onMach[i]
	if len(l) == cap(l) {
		nb := s.takeBlock(2 * cap(l))
		copy(nb, l)
		s.freeBlock(l)
		l = nb[:len(l)]
	}
	s.onMach[i] = append(l, id)
}

// dropJob removes a job from machine i's list, keeping the order, and
// moves a list that became a quarter full back to a smaller block.
func (s *Sim) dropJob(i int, id int32) {
	l := s.onMach[i]
	k := slices.Index(l, id)
	l = append(l[:k], l[k+1:]...)
	if c := cap(l); c > onMachCap && len(l) <= c/4 {
		nb := s.takeBlock(c / 2)
		copy(nb, l)
		s.freeBlock(l)
		l = nb[:len(l)]
	}
	s.onMach[i] = l
}

func (s *Sim) takeBlock(n int) []int32 {
	c := bits.Len(uint(n)) - 1
	if k := len(s.blocks[c]); k > 0 {
		b := s.blocks[c][k-1]
		s.blocks[c] = s.blocks[c][:k-1]
		return b[:n]
	}
	return make([]int32, n)
}

func (s *Sim) freeBlock(b []int32) {
	c := bits.Len(uint(cap(b))) - 1
	s.blocks[c] = append(s.blocks[c], b[:cap(b)])
}

// Sim is a deterministic cluster simulation: a pure state machine advanced
// by Step. It has no goroutines, wall clock or I/O; the same cluster,
// workload, scheduler and config give the same run.
type Sim struct {
	cfg   SimConfig
	teg   TEGConfig
	c     *Cluster
	w     *Workload
	sched Scheduler
	state *State

	rngSched *rand.Rand
	rngFail  *rand.Rand
	rngTEG   *rand.Rand

	now   float64
	ticks int
	next  int // next job to arrive
	jobs  []jobRec

	tq tenantQueues
	// epoch counts capacity-freeing events (completions, evictions,
	// repairs). Between two of them free capacity only shrinks, so a job the
	// scheduler could not place cannot become placeable: like
	// kube-scheduler's unschedulable queue, it waits for the next event.
	epoch   uint64
	failed  []Request // shapes that got Wait in this pass
	victims []int32   // scratch for machine failures

	ends     minHeap[timed] // planned completions
	sats     minHeap[timed] // memory plateaus reached
	alarms   minHeap[timed] // memory barrier or OOM crossings per machine
	events   minHeap[event]
	nrunning int
	onMach   [][]int32 // running job IDs per machine
	// onMachBuf backs the first onMachCap entries of every onMach list;
	// longer lists live in power-of-two blocks recycled through blocks, so
	// that steady-state placements and moves do not allocate.
	onMachBuf []int32
	blocks    [32][][]int32 // free blocks by log2 of their capacity
	migr      []int32       // migratable running jobs (Langevin agents)

	obs      Observation
	view     TEGView
	capacity struct{ cpu, mem int64 } // largest machine, for early rejection
	power    float64                  // current draw of machines that are up, W
	peak     float64                  // all machines at peak, W
	frag     float64

	ld     loads
	fields fieldRing
	// Candidate pools of the langevin scheduler (see eligible).
	eligibleCache map[eligibleKey][]int32
	fragTmp       []int32
	touchSink     float64 // keeps touch's loads alive
	ctl           controller
	tok           tokens

	// Per-tick reward inputs.
	tickJudged, tickMet int
	queuedArrivalSum    float64
	lastReward          RewardTerms
	accrued             Accrual
	inSystem            float64 // Σ 1/max(duration, 1) over queued and running jobs

	acc    metricsAcc
	hist   loadHistory // machines' load over the last ticks (observation.go)
	series *Series     // nil unless cfg.Series is on (series.go)
}

// NewSim prepares a run of workload w on cluster c under sched.
func NewSim(c *Cluster, w *Workload, sched Scheduler, cfg SimConfig) (*Sim, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	teg := GovernorFor(sched)
	if cfg.TEG != nil {
		teg = *cfg.TEG
	}
	if err := teg.validate(cfg.Tick); err != nil {
		return nil, fmt.Errorf("sim TEG config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sim cluster: %w", err)
	}
	for i := range w.Jobs {
		if err := w.Jobs[i].Validate(); err != nil {
			return nil, fmt.Errorf("sim workload: %w", err)
		}
		if i > 0 && w.Jobs[i].Arrival < w.Jobs[i-1].Arrival {
			return nil, fmt.Errorf("sim workload: job %d arrives before job %d", i, i-1)
		}
	}
	// Replica actions append jobs: never into the caller's workload.
	w = &Workload{Name: w.Name, Jobs: slices.Clip(w.Jobs)}
	n := len(c.Machines)
	s := &Sim{
		cfg:       cfg,
		teg:       teg,
		c:         c,
		w:         w,
		sched:     sched,
		state:     NewState(c, cfg.Seed),
		rngSched:  rand.New(rand.NewPCG(cfg.Seed, 0x7465672d73636864)), // "teg-schd"
		rngFail:   rand.New(rand.NewPCG(cfg.Seed, 0x7465672d6661696c)), // "teg-fail"
		rngTEG:    rand.New(rand.NewPCG(cfg.Seed, 0x7465672d6c616e67)), // "teg-lang"
		jobs:      hugeSlice[jobRec](len(w.Jobs)),
		onMach:    make([][]int32, n),
		onMachBuf: make([]int32, n*onMachCap),
		ld:        newLoads(c),
		series:    newSeries(&cfg, len(w.Jobs)),
	}
	s.ends.less, s.sats.less, s.alarms.less = timedLess, timedLess, timedLess
	s.events.less = func(a, b event) bool {
		if a.t != b.t {
			return a.t < b.t
		}
		return a.machine < b.machine
	}
	for i := range s.onMach {
		s.onMach[i] = s.onMachBuf[i*onMachCap : i*onMachCap : (i+1)*onMachCap]
	}
	for i := range s.jobs {
		s.jobs[i].migrIdx = -1
		s.jobs[i].firstRun = -1
	}
	s.state.Target = NewTargetWorkload(w.Jobs, s.state)
	s.eligibleCache = map[eligibleKey][]int32{}
	if s.teg.Safety {
		s.state.guard = s.safeNew
	}
	for i := range c.Machines {
		m := &c.Machines[i]
		s.capacity.cpu = max(s.capacity.cpu, m.CPU)
		s.capacity.mem = max(s.capacity.mem, m.Mem)
		s.peak += m.PeakW
		s.ld.hot[i].fc.val = s.state.MachineFrag(i)
		s.frag += s.ld.hot[i].fc.val
	}
	if cfg.MTBF > 0 {
		for i := range c.Machines {
			s.events.Push(event{t: s.rngFail.ExpFloat64() * cfg.MTBF, machine: i})
		}
	}
	for i := range c.Machines {
		s.repower(i)
	}
	s.ctl.init(&s.teg)
	services := 0
	for i := range w.Jobs {
		if w.Jobs[i].Service >= services {
			services = w.Jobs[i].Service + 1
		}
	}
	s.tok.init(c, &s.teg, services)
	s.view = TEGView{sim: s, Config: &s.teg}
	s.obs.TEG = &s.view
	s.refreshField()
	return s, nil
}

// State returns the live cluster state (read-only for callers).
func (s *Sim) State() *State { return s.state }

// Now returns the simulated time in seconds.
func (s *Sim) Now() float64 { return s.now }

// Config returns the run's TEG configuration.
func (s *Sim) Config() TEGConfig { return s.teg }

// Done reports whether the run has ended.
func (s *Sim) Done() bool {
	if s.ticks >= s.cfg.MaxTicks {
		return true
	}
	if s.cfg.Duration > 0 {
		return s.now >= s.cfg.Duration
	}
	return s.next == len(s.w.Jobs) && s.tq.n == 0 && s.nrunning == 0
}

// static reports whether ticks without events change nothing but time:
// then the loop may jump over them.
func (s *Sim) static() bool {
	return s.tq.n == 0 && !s.teg.Moves && !s.teg.Controller
}

// Step advances the simulation by one tick: failures and repairs, memory
// plateaus and barrier alarms, arrivals, completions, the damping
// controller and tokens, scheduling of the queue, Langevin moves, then the
// field and measurements. When nothing but time can change (empty queue, no
// moves, no controller), the ticks before the next event are skipped at
// once and their integrals accounted exactly.
func (s *Sim) Step() {
	dt := s.cfg.Tick
	if s.static() {
		s.skipIdle()
	}
	s.integrate(dt, 1)
	s.now += dt
	s.ticks++
	t := s.now
	s.tickJudged, s.tickMet = 0, 0

	for s.events.Len() > 0 && s.events.Peek().t <= t {
		s.machineEvent(s.events.Pop())
	}
	for s.sats.Len() > 0 && s.sats.Peek().t <= t {
		e := s.sats.Pop()
		if r := &s.jobs[e.id]; r.state == running && r.useVer == e.ver && !r.saturated {
			s.saturate(int(e.id))
			s.armAlarm(r.alloc.Machine)
			s.epoch++ // the barrier's headroom grew: parked jobs may fit
		}
	}
	for s.alarms.Len() > 0 && s.alarms.Peek().t <= t {
		e := s.alarms.Pop()
		if s.ld.alarmVer[e.id] == e.ver {
			s.memAlarm(int(e.id))
		}
	}
	for s.next < len(s.w.Jobs) && s.w.Jobs[s.next].Arrival <= t {
		s.arrive(s.next)
		s.next++
	}
	for s.ends.Len() > 0 && s.ends.Peek().t <= t {
		e := s.ends.Pop()
		r := &s.jobs[e.id]
		if r.state != running || r.seq != e.ver {
			continue // stale: the job stopped or got an earlier end
		}
		if r.end > e.t {
			s.ends.Push(timed{t: r.end, id: e.id, ver: e.ver}) // postponed
			continue
		}
		s.complete(int(e.id))
	}
	s.tok.decay(dt)
	if s.teg.Controller {
		s.ctl.update(s.phi())
	} else {
		s.ctl.observe(s.phi())
	}
	s.schedule()
	if s.teg.Moves {
		s.moves()
	}
	s.refreshField()
	if s.cfg.FragEvery > 0 && s.ticks%s.cfg.FragEvery == 0 {
		s.sampleFrag()
	}
	if s.ticks%s.teg.NashEvery == 0 {
		s.sampleNash()
	}
	s.reward(1)
	s.recordHistory()
	s.seriesTick()
}

// skipIdle jumps to the tick before the next event while the state is
// static, integrating metrics, tokens and reward over the skipped ticks.
func (s *Sim) skipIdle() {
	dt := s.cfg.Tick
	next := math.Inf(1)
	if s.next < len(s.w.Jobs) {
		next = s.w.Jobs[s.next].Arrival
	}
	for _, h := range []*minHeap[timed]{&s.ends, &s.sats, &s.alarms} {
		if h.Len() > 0 {
			next = min(next, h.Peek().t)
		}
	}
	if s.events.Len() > 0 {
		next = min(next, s.events.Peek().t)
	}
	if s.cfg.Duration > 0 {
		next = min(next, s.cfg.Duration)
	}
	skip := math.Floor((next-s.now)/dt) - 1
	if !(skip > 0) || math.IsInf(skip, 0) {
		return
	}
	skip = min(skip, float64(s.cfg.MaxTicks-s.ticks-1))
	// Stay on the grids of periodic work so that skipping never changes
	// which ticks do it.
	for _, every := range []int{s.teg.FieldEvery, s.cfg.FragEvery, s.teg.NashEvery} {
		if every > 0 {
			skip = min(skip, float64(every-1-s.ticks%every))
		}
	}
	if skip <= 0 {
		return
	}
	k := int(skip)
	s.tickJudged, s.tickMet = 0, 0 // nothing is judged in a skipped tick
	s.seriesSkip(k)
	s.integrate(dt, k)
	s.tok.decay(skip * dt)
	s.reward(k)
	s.now += skip * dt
	s.ticks += k
}

// Run steps until Done and returns the run's metrics.
func (s *Sim) Run() Metrics {
	for !s.Done() {
		s.Step()
	}
	return s.Metrics()
}

func (s *Sim) arrive(id int) {
	j := &s.w.Jobs[id]
	r := &s.jobs[id]
	if r.state != notArrived {
		return // a replica added by an action: queued when it was made
	}
	s.acc.submitted++
	r.tenant = int32(s.tok.index(j.Tenant))
	if j.CPU > s.capacity.cpu || j.Mem > s.capacity.mem || !s.feasibleAnywhere(j) {
		// No machine of the cluster can ever host it.
		r.state = failed
		s.acc.failed++
		s.acc.rejected++
		s.judge(id, true)
		return
	}
	if j.Service >= 0 {
		s.tok.replicas[j.Service]++
	}
	r.work = j.Duration
	s.inSystem += 1 / max(j.Duration, 1)
	s.enqueue(id, j.Arrival)
}

// enqueue puts a job at the back of its tenant's queue.
func (s *Sim) enqueue(id int, at float64) {
	r := &s.jobs[id]
	r.state = queued
	r.queuedAt = at
	r.waitEpoch = 0
	s.tq.push(int(r.tenant), int32(id))
	j := &s.w.Jobs[id]
	s.ctl.queuedCPU += float64(j.CPU)
	s.ctl.queuedGPU += float64(j.GPUDemand())
	s.queuedArrivalSum += j.Arrival
}

// dequeued updates the queue aggregates of a job leaving the queue.
func (s *Sim) dequeued(id int) {
	j := &s.w.Jobs[id]
	s.ctl.queuedCPU -= float64(j.CPU)
	s.ctl.queuedGPU -= float64(j.GPUDemand())
	s.queuedArrivalSum -= j.Arrival
	if s.tq.n == 0 {
		s.ctl.queuedCPU, s.ctl.queuedGPU, s.queuedArrivalSum = 0, 0, 0
	}
}

// feasibleAnywhere checks a job against the empty capacity of every
// machine.
func (s *Sim) feasibleAnywhere(j *Job) bool {
	req := s.state.Request(j)
	for i := range s.c.Machines {
		m := &s.c.Machines[i]
		if m.CPU < req.CPU || m.Mem < req.Mem || m.GPUs < req.GPUs {
			continue
		}
		if req.GPUs > 0 && !s.state.ModelOK(i, &req) {
			continue
		}
		if s.teg.Safety && float64(req.Mem)*(memStartMax+s.teg.Horizon*s.teg.GrowthMax) > float64(m.Mem) {
			continue // the barrier refuses it even on this machine empty
		}
		return true
	}
	return false
}

func (s *Sim) machineEvent(ev event) {
	i := ev.machine
	if ev.up {
		s.state.setUp(i, true)
		s.repower(i)
		s.epoch++
		s.refreshFrag(i)
		s.events.Push(event{t: ev.t + s.rngFail.ExpFloat64()*s.cfg.MTBF, machine: i})
		return
	}
	s.acc.machineFailures++
	// Evict the machine's jobs back to the queue (in ID order); their work
	// is lost.
	victims := append(s.victims[:0], s.onMach[i]...)
	s.victims = victims
	slices.Sort(victims)
	for _, id := range victims {
		s.kill(int(id), ev.t)
		s.acc.evictions++
	}
	s.state.setUp(i, false)
	s.repower(i)
	s.refreshFrag(i)
	s.events.Push(event{t: ev.t + s.rngFail.ExpFloat64()*s.cfg.MTTR, machine: i, up: true})
}

// kill stops a running job and loses its progress: back to the queue, or
// failed after too many restarts.
func (s *Sim) kill(id int, at float64) {
	s.stop(id)
	r := &s.jobs[id]
	r.restarts++
	if r.restarts > s.cfg.MaxRestarts {
		r.state = failed
		s.acc.failed++
		s.leave(id)
		if svc := s.w.Jobs[id].Service; svc >= 0 {
			s.tok.replicas[svc]--
		}
		s.judge(id, true)
		return
	}
	r.work = s.w.Jobs[id].Duration
	s.enqueue(id, at)
}

// cpuUseMax bounds a job's CPU use as a fraction of its request (the
// usage model's burst ceiling); the power barrier relies on it.
const cpuUseMax = 1.25

// repower recomputes machine i's power draw (idle plus the
// utilisation-linear part: host power follows CPU in use, GPU power follows
// GPU allocated) and applies the change to the cluster and rack totals. The
// rack totals count a machine that is down at idle: it may come back at any
// time, and the power barrier must hold then too.
func (s *Sim) repower(i int) {
	m := &s.c.Machines[i]
	actual, barrier := 0.0, m.IdleW
	if s.state.M[i].Up {
		cpu := min(s.ld.cpuUse[i], float64(m.CPU))
		actual = m.IdleW + s.dynPower(i, cpu, float64(int64(m.GPUs*MilliGPU)-int64(s.state.M[i].IdleGPU)))
		barrier = actual
	}
	s.power += actual - s.ld.power[i]
	s.ld.rackPower[m.Rack] += barrier - s.ld.barrierPower[i]
	s.ld.power[i], s.ld.barrierPower[i] = actual, barrier
}

// dynPower is the utilisation-linear power of cpu millicores in use and gpu
// milli allocated on machine i.
func (s *Sim) dynPower(i int, cpu, gpu float64) float64 {
	ms := &s.ld.hot[i].machStatic
	return ms.wattsPerCPU*cpu + ms.wattsPerGPU*gpu
}

// dynCoefficients splits machine i's dynamic power range into a host part,
// linear in CPU in use, and a GPU part, linear in GPU allocated: watts per
// millicore and per milli-GPU.
func dynCoefficients(m *Machine) (perCPU, perGPU float64) {
	hostIdle, hostPeak := machinePower(m.CPU, 0, "")
	hostDyn := hostPeak - hostIdle
	gpuDyn := (m.PeakW - m.IdleW) - hostDyn
	if gpuDyn < 0 { // custom machines with their own envelope
		hostDyn, gpuDyn = m.PeakW-m.IdleW, 0
	}
	perCPU = hostDyn / float64(m.CPU)
	if m.GPUs > 0 {
		perGPU = gpuDyn / float64(m.GPUs*MilliGPU)
	}
	return perCPU, perGPU
}

// place allocates machine i (GPU gpu for share jobs) to job id and runs it
// there. With fresh, the job starts a new run (its usage drawn anew);
// otherwise it continues the usage the caller left in its record (a move).
// The caller checked Fits and the safety layer.
func (s *Sim) place(id, i, gpu int, fresh bool) error {
	j := &s.w.Jobs[id]
	req := s.state.Request(j)
	if !req.Share() {
		gpu = -1
	}
	al, err := s.state.allocate(i, &req, gpu)
	if err != nil {
		return err
	}
	r := &s.jobs[id]
	r.alloc = al
	r.state = running
	if fresh {
		r.starts++
		r.use = drawUsage(s.cfg.Seed, j, r.starts, s.now, &s.teg)
		r.saturated = false
		r.start = s.now
		r.mark = s.now
	}
	s.nrunning++
	s.pushJob(i, int32(id))
	if j.Migratable {
		r.migrIdx = int32(len(s.migr))
		s.migr = append(s.migr, int32(id))
	}
	rack := s.c.Machines[i].Rack
	if j.Service >= 0 {
		s.tok.serviceRack(j.Service, rack, +1)
	}
	s.tok.earn(int(r.tenant), j, +1)
	s.addUsage(id, i, +1)
	s.repower(i)
	if b := s.c.Racks[rack].PowerBudgetW; b > 0 && s.ld.rackPower[rack] > b {
		s.acc.safetyViolations++ // only possible with the safety layer off
	}
	if !r.saturated {
		s.sats.Push(timed{t: r.use.tsat, id: int32(id), ver: r.useVer})
	}
	s.armAlarm(i)
	r.rate = 0 // forces rerate to schedule the completion
	r.end = math.Inf(1)
	s.rerate(i)
	return nil
}

// unplace releases job id's machine (completion, kill, preemption, move).
func (s *Sim) unplace(id int) {
	r := &s.jobs[id]
	j := &s.w.Jobs[id]
	i := r.alloc.Machine
	s.dropJob(i, int32(id))
	s.addUsage(id, i, -1)
	s.state.release(r.alloc)
	s.repower(i)
	rack := s.c.Machines[i].Rack
	s.epoch++
	s.nrunning--
	r.state = queued // callers set the final state
	r.seq++          // invalidates its completion entry
	r.useVer++       // and its plateau entry
	if r.migrIdx >= 0 {
		last := s.migr[len(s.migr)-1]
		s.migr[r.migrIdx] = last
		s.jobs[last].migrIdx = r.migrIdx
		s.migr = s.migr[:len(s.migr)-1]
		r.migrIdx = -1
	}
	if j.Service >= 0 {
		s.tok.serviceRack(j.Service, rack, -1)
	}
	s.tok.earn(int(r.tenant), j, -1)
	s.armAlarm(i)
	s.rerate(i)
}

// stop releases a running job's resources, bringing its work up to date.
func (s *Sim) stop(id int) {
	r := &s.jobs[id]
	s.progress(r)
	s.unplace(id)
}

func (s *Sim) complete(id int) {
	s.stop(id)
	r := &s.jobs[id]
	j := &s.w.Jobs[id]
	r.state = completed
	s.acc.completed++
	s.leave(id)
	if j.Service >= 0 {
		s.tok.replicas[j.Service]--
	}
	jct := s.now - j.Arrival
	s.acc.jct = append(s.acc.jct, jct)
	slowdown := jct / max(j.Duration, 1)
	s.acc.slowdown += slowdown
	s.seriesJob(id, jct, slowdown)
	if !r.judged {
		s.judge(id, j.Deadline > 0 && jct > j.Deadline)
	}
}

// leave takes a job that arrived out of the system's slowdown accrual.
func (s *Sim) leave(id int) {
	s.inSystem -= 1 / max(s.w.Jobs[id].Duration, 1)
	if s.inSystem < 1e-12 {
		s.inSystem = 0 // no drift below zero from rounding
	}
}

// judge records a job's SLA outcome once.
func (s *Sim) judge(id int, violated bool) {
	r := &s.jobs[id]
	if r.judged {
		return
	}
	r.judged = true
	s.acc.judged++
	s.tickJudged++
	if violated {
		s.acc.violations++
	} else {
		s.tickMet++
	}
}

// schedule offers queued jobs to the scheduler, highest priority first (the
// token priority when tokens are on, else arrival order), at most ScanLimit
// decisions a tick.
func (s *Sim) schedule() {
	if s.tq.n == 0 {
		return
	}
	s.failed = s.failed[:0]
	s.tq.begin(s)
	offers := 0
	for iter := 0; offers < s.cfg.ScanLimit && iter < 16*s.cfg.ScanLimit; iter++ {
		t, k, ok := s.tq.nextBest(s)
		if !ok {
			break
		}
		id := int(s.tq.q[t][k])
		if id < 0 {
			continue // removed in this pass by a replica scale-down
		}
		r := &s.jobs[id]
		if r.waitEpoch == s.epoch+1 {
			continue // nothing freed since it last waited
		}
		if s.ctl.d > 0 && s.tq.priority(s, id) <= s.ctl.d*s.teg.CTax {
			s.acc.taxed++
			continue // the admission tax holds it back this tick
		}
		offers++
		s.offer(id, t, k)
	}
	s.tq.compact()
}

// offer asks the scheduler to place job id, entry k of tenant t's queue;
// it reports whether the job was placed.
func (s *Sim) offer(id, t, k int) bool {
	o := &s.obs
	j := &s.w.Jobs[id]
	o.State, o.Time = s.state, s.now
	o.Job, o.Req, o.Queue = j, s.state.Request(j), s.tq.n
	s.view.refresh()
	// A shape that could not be placed earlier in this pass cannot be now.
	if slices.Contains(s.failed, o.Req) {
		s.jobs[id].waitEpoch = s.epoch + 1
		return false
	}
	a := s.sched.Decide(o, s.rngSched)
	if !math.IsNaN(float64(a.Damping)) {
		s.ctl.override(float64(a.Damping))
	}
	placed := s.act(id, t, k, a)
	s.applyService(id, a) // may append jobs: no pointers held past here
	return placed
}

// act carries out the placement part of an action.
func (s *Sim) act(id, t, k int, a Action) bool {
	req := s.obs.Req
	if a.Node < 0 {
		s.jobs[id].waitEpoch = s.epoch + 1
		if len(s.failed) < 64 {
			s.failed = append(s.failed, req)
		}
		return false
	}
	if a.Node >= len(s.c.Machines) || !s.state.Fits(a.Node, &req) {
		s.acc.invalidDecisions++
		return false
	}
	node, gpu := a.Node, a.GPU
	if !s.safeStart(id, node) {
		// Project to the nearest machine that satisfies the barrier, or
		// refuse: the job waits, like an unschedulable one, for capacity to
		// be freed.
		s.acc.safetyActions++
		if node, gpu = s.project(id, node), -1; node < 0 {
			s.jobs[id].waitEpoch = s.epoch + 1
			return false
		}
	}
	if err := s.place(id, node, gpu, true); err != nil {
		s.acc.invalidDecisions++
		return false
	}
	s.tq.take(t, k)
	s.dequeued(id)
	s.begin(id)
	return true
}

// begin does the bookkeeping of a job that just started from the queue.
func (s *Sim) begin(id int) {
	r := &s.jobs[id]
	j := &s.w.Jobs[id]
	if r.firstRun < 0 {
		r.firstRun = s.now
		s.acc.waits = append(s.acc.waits, s.now-j.Arrival)
		if j.Kind == Service && j.LatencySLO > 0 {
			s.judge(id, s.now-j.Arrival > j.LatencySLO)
		}
	}
	if wait := s.now - r.queuedAt; wait > s.cfg.StarveAfter && !r.starved {
		r.starved = true
		s.acc.starved++
	}
}

// refreshFrag recomputes one machine's fragmentation contribution.
func (s *Sim) refreshFrag(i int) {
	fc := &s.ld.hot[i].fc
	s.frag -= fc.val
	fc.val = s.state.MachineFrag(i)
	s.frag += fc.val
	fc.ver = s.state.M[i].Ver
}

// sampleFrag brings the fragmentation total up to date (only machines whose
// version moved are recomputed) and records a sample. The total is summed
// afresh in machine order: a running sum would depend, in its last bits, on
// when each machine's value was refreshed, and schedulers that read
// fragmentation (learned policies' features) refresh it at other times.
func (s *Sim) sampleFrag() {
	var total float64
	for i := range s.ld.hot {
		if s.ld.hot[i].fc.ver != s.state.M[i].Ver {
			s.refreshFrag(i)
		}
		total += s.ld.hot[i].fc.val
	}
	s.frag = total
	if s.state.CapGPU > 0 {
		idle := s.state.CapGPU - s.state.UsedGPU
		s.acc.fragRate += s.frag / float64(s.state.CapGPU)
		if idle > 0 {
			s.acc.fragRatio += s.frag / float64(idle)
		}
	}
	s.acc.fragSamples++
}

// integrate accumulates the time integrals of utilisation, power, queue
// length, damping and token supply over k ticks of constant state.
func (s *Sim) integrate(dt float64, k int) {
	st := s.state
	span := dt * float64(k)
	if st.CapCPU > 0 {
		s.acc.cpu += span * float64(st.UsedCPU) / float64(st.CapCPU)
	}
	if st.CapMem > 0 {
		s.acc.mem += span * float64(st.UsedMem) / float64(st.CapMem)
	}
	if st.CapGPU > 0 {
		s.acc.gpu += span * float64(st.UsedGPU) / float64(st.CapGPU)
	}
	s.acc.energyJ += span * s.power
	s.acc.queue += span * float64(s.tq.n)
	s.acc.damping += span * s.ctl.d
	s.acc.tokens += span * s.tok.supply()
	s.acc.time += span
}
