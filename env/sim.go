package env

import (
	"container/heap"
	"fmt"
	"math"
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
	// MaxRestarts: a job evicted more often than this fails.
	MaxRestarts int
	// FragEvery samples GPU fragmentation every this many ticks.
	FragEvery int
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
	if c.Tick == 0 {
		c.Tick = d.Tick
	}
	if c.MaxTicks == 0 {
		c.MaxTicks = d.MaxTicks
	}
	if c.MTBF == 0 {
		c.MTBF = d.MTBF
	}
	if c.MTTR == 0 {
		c.MTTR = d.MTTR
	}
	if c.ScanLimit == 0 {
		c.ScanLimit = d.ScanLimit
	}
	if c.StarveAfter == 0 {
		c.StarveAfter = d.StarveAfter
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = d.MaxRestarts
	}
	if c.FragEvery == 0 {
		c.FragEvery = d.FragEvery
	}
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
	return nil
}

// jobState tracks one job through the system.
type jobState uint8

const (
	notArrived jobState = iota
	queued
	running
	completed
	failed
)

type jobRec struct {
	state    jobState
	restarts int
	queuedAt float64 // last time it entered the queue
	firstRun float64 // first start time (-1 before)
	start    float64 // current run's start
	end      float64 // current run's planned end
	alloc    Alloc
	starved  bool
	judged   bool   // SLA decided (services at start)
	run      uint32 // number of starts; tags its completion entry
	// waitEpoch is Sim.epoch+1 when the scheduler last answered Wait; the
	// job is not offered again until capacity has been freed since.
	waitEpoch uint64
}

// event is a machine failure or recovery.
type event struct {
	t       float64
	machine int
	up      bool
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].machine < h[j].machine
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// endEntry is a running job's planned completion. Evicted jobs leave stale
// entries behind, recognised by their run number and skipped when they
// surface (lazy deletion keeps evictions O(log n)).
type endEntry struct {
	end float64
	id  int32
	run uint32
}

// endHeap orders planned completions by time, then job ID.
type endHeap []endEntry

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(a, b int) bool {
	if h[a].end != h[b].end {
		return h[a].end < h[b].end
	}
	return h[a].id < h[b].id
}
func (h endHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(endEntry)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Sim is a deterministic cluster simulation: a pure state machine advanced
// by Step. It has no goroutines, wall clock or I/O; the same cluster,
// workload, scheduler and config give the same run.
type Sim struct {
	cfg   SimConfig
	c     *Cluster
	w     *Workload
	sched Scheduler
	state *State

	rngSched *rand.Rand
	rngFail  *rand.Rand

	now    float64
	ticks  int
	next   int // next job to arrive
	jobs   []jobRec
	queue  []int
	cursor int // rotating scan position in the queue beyond its head
	// epoch counts capacity-freeing events (completions, evictions,
	// repairs). Between two of them free capacity only shrinks, so a job the
	// scheduler could not place cannot become placeable: like
	// kube-scheduler's unschedulable queue, it waits for the next event.
	epoch    uint64
	failed   []Request // shapes that got Wait in this pass
	running  endHeap
	nrunning int
	onMach   [][]int // running job IDs per machine
	events   eventHeap
	obs      Observation
	capacity struct{ cpu, mem int64 } // largest machine, for early rejection
	power    float64                  // current draw, W
	nodeFrag []float64
	fragVer  []uint32
	frag     float64

	acc metricsAcc
}

// NewSim prepares a run of workload w on cluster c under sched.
func NewSim(c *Cluster, w *Workload, sched Scheduler, cfg SimConfig) (*Sim, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
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
	s := &Sim{
		cfg:      cfg,
		c:        c,
		w:        w,
		sched:    sched,
		state:    NewState(c, cfg.Seed),
		rngSched: rand.New(rand.NewPCG(cfg.Seed, 0x7465672d73636864)), // "teg-schd"
		rngFail:  rand.New(rand.NewPCG(cfg.Seed, 0x7465672d6661696c)), // "teg-fail"
		jobs:     make([]jobRec, len(w.Jobs)),
		onMach:   make([][]int, len(c.Machines)),
		nodeFrag: make([]float64, len(c.Machines)),
		fragVer:  make([]uint32, len(c.Machines)),
	}
	s.state.Target = NewTargetWorkload(w.Jobs, s.state)
	for i := range c.Machines {
		s.capacity.cpu = max(s.capacity.cpu, c.Machines[i].CPU)
		s.capacity.mem = max(s.capacity.mem, c.Machines[i].Mem)
		s.power += c.Machines[i].IdleW
		s.nodeFrag[i] = s.state.MachineFrag(i)
		s.frag += s.nodeFrag[i]
	}
	if cfg.MTBF > 0 {
		for i := range c.Machines {
			s.events = append(s.events, event{t: s.rngFail.ExpFloat64() * cfg.MTBF, machine: i})
		}
		heap.Init(&s.events)
	}
	s.acc.init()
	return s, nil
}

// State returns the live cluster state (read-only for callers).
func (s *Sim) State() *State { return s.state }

// Now returns the simulated time in seconds.
func (s *Sim) Now() float64 { return s.now }

// Done reports whether the run has ended.
func (s *Sim) Done() bool {
	if s.ticks >= s.cfg.MaxTicks {
		return true
	}
	if s.cfg.Duration > 0 {
		return s.now >= s.cfg.Duration
	}
	return s.next == len(s.w.Jobs) && len(s.queue) == 0 && s.nrunning == 0
}

// Step advances the simulation by one tick: failures and repairs,
// arrivals, completions, then scheduling of the queue. When the queue is
// empty, ticks in which nothing can happen are skipped at once (their
// metrics are integrated exactly, since the state is constant).
func (s *Sim) Step() {
	dt := s.cfg.Tick
	if len(s.queue) == 0 {
		// Jump to the tick before the next event.
		next := math.Inf(1)
		if s.next < len(s.w.Jobs) {
			next = s.w.Jobs[s.next].Arrival
		}
		s.dropStale()
		if len(s.running) > 0 {
			next = min(next, s.running[0].end)
		}
		if len(s.events) > 0 {
			next = min(next, s.events[0].t)
		}
		if s.cfg.Duration > 0 {
			next = min(next, s.cfg.Duration)
		}
		if skip := math.Floor((next-s.now)/dt) - 1; skip > 0 && !math.IsInf(skip, 0) {
			skip = min(skip, float64(s.cfg.MaxTicks-s.ticks-1))
			if skip > 0 {
				s.integrate(skip * dt)
				s.now += skip * dt
				s.ticks += int(skip)
			}
		}
	}
	s.integrate(dt)
	s.now += dt
	s.ticks++
	t := s.now

	for len(s.events) > 0 && s.events[0].t <= t {
		ev := heap.Pop(&s.events).(event)
		s.machineEvent(ev)
	}
	for s.next < len(s.w.Jobs) && s.w.Jobs[s.next].Arrival <= t {
		s.arrive(s.next)
		s.next++
	}
	for s.dropStale(); len(s.running) > 0 && s.running[0].end <= t; s.dropStale() {
		e := heap.Pop(&s.running).(endEntry)
		s.complete(int(e.id))
	}
	s.schedule()
	if s.cfg.FragEvery > 0 && s.ticks%s.cfg.FragEvery == 0 {
		s.sampleFrag()
	}
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
	r.firstRun = -1
	s.acc.submitted++
	if j.CPU > s.capacity.cpu || j.Mem > s.capacity.mem || !s.feasibleAnywhere(j) {
		// No machine of the cluster can ever host it.
		r.state = failed
		s.acc.failed++
		s.acc.rejected++
		s.judge(id, true)
		return
	}
	r.state = queued
	r.queuedAt = j.Arrival
	s.queue = append(s.queue, id)
}

// feasibleAnywhere checks a job against the empty capacity of every machine
// shape. Cheap enough: run once per arrival on the distinct shapes.
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
		return true
	}
	return false
}

func (s *Sim) machineEvent(ev event) {
	i := ev.machine
	if ev.up {
		s.state.setUp(i, true)
		s.epoch++
		s.power += s.c.Machines[i].IdleW
		s.refreshFrag(i)
		s.events.Push(event{t: ev.t + s.rngFail.ExpFloat64()*s.cfg.MTBF, machine: i})
		heap.Fix(&s.events, len(s.events)-1)
		return
	}
	s.acc.machineFailures++
	// Evict the machine's jobs back to the queue (in ID order).
	victims := slices.Clone(s.onMach[i])
	slices.Sort(victims)
	for _, id := range victims {
		s.stop(id)
		r := &s.jobs[id]
		r.restarts++
		s.acc.evictions++
		if r.restarts > s.cfg.MaxRestarts {
			r.state = failed
			s.acc.failed++
			s.judge(id, true)
			continue
		}
		r.state = queued
		r.queuedAt = ev.t
		s.queue = append(s.queue, id)
	}
	s.power -= s.machinePower(i)
	s.state.setUp(i, false)
	s.refreshFrag(i)
	s.events.Push(event{t: ev.t + s.rngFail.ExpFloat64()*s.cfg.MTTR, machine: i, up: true})
	heap.Fix(&s.events, len(s.events)-1)
}

// machinePower is machine i's draw now: idle plus the utilisation-linear
// part, where host and GPU power scale with their allocated fractions.
func (s *Sim) machinePower(i int) float64 {
	if !s.state.Up[i] {
		return 0
	}
	m := &s.c.Machines[i]
	hostIdle, hostPeak := machinePower(m.CPU, 0, "")
	hostDyn := hostPeak - hostIdle
	gpuDyn := (m.PeakW - m.IdleW) - hostDyn
	if gpuDyn < 0 { // custom machines with their own envelope
		hostDyn, gpuDyn = m.PeakW-m.IdleW, 0
	}
	p := m.IdleW + hostDyn*float64(m.CPU-s.state.FreeCPU[i])/float64(m.CPU)
	if m.GPUs > 0 {
		p += gpuDyn * float64(m.GPUs*MilliGPU-int(s.state.IdleGPU[i])) / float64(m.GPUs*MilliGPU)
	}
	return p
}

// stop releases a running job's resources (completion or eviction).
func (s *Sim) stop(id int) {
	r := &s.jobs[id]
	i := r.alloc.Machine
	before := s.machinePower(i)
	s.state.release(r.alloc)
	s.epoch++
	s.power += s.machinePower(i) - before
	list := s.onMach[i]
	k := slices.Index(list, id)
	s.onMach[i] = append(list[:k], list[k+1:]...)
	r.state = queued // caller decides the final state
	s.nrunning--
}

// dropStale pops completion entries of jobs evicted since they started.
func (s *Sim) dropStale() {
	for len(s.running) > 0 {
		e := s.running[0]
		if r := &s.jobs[e.id]; r.state == running && r.run == e.run {
			return
		}
		heap.Pop(&s.running)
	}
}

func (s *Sim) complete(id int) {
	s.stop(id)
	r := &s.jobs[id]
	j := &s.w.Jobs[id]
	r.state = completed
	s.acc.completed++
	jct := r.end - j.Arrival
	s.acc.jct = append(s.acc.jct, jct)
	s.acc.slowdown += jct / max(j.Duration, 1)
	if !r.judged {
		s.judge(id, j.Deadline > 0 && jct > j.Deadline)
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
	if violated {
		s.acc.violations++
	}
}

// schedule offers queued jobs to the scheduler: the oldest ScanLimit/2 in
// queue order, then ScanLimit/2 more from a cursor that rotates through the
// rest of the queue, so a blocked head cannot starve the jobs behind it while
// a tick's cost stays bounded whatever the backlog.
func (s *Sim) schedule() {
	n := len(s.queue)
	if n == 0 {
		return
	}
	head := min(n, (s.cfg.ScanLimit+1)/2)
	placed := 0
	s.failed = s.failed[:0]
	for k := 0; k < head; k++ {
		placed += s.offer(k, n-placed)
	}
	if rest := n - head; rest > 0 {
		scan := min(rest, s.cfg.ScanLimit-head)
		if s.cursor >= rest {
			s.cursor = 0
		}
		for k := 0; k < scan; k++ {
			placed += s.offer(head+(s.cursor+k)%rest, n-placed)
		}
		s.cursor += scan
	}
	if placed > 0 {
		keep := s.queue[:0]
		for _, id := range s.queue {
			if id >= 0 {
				keep = append(keep, id)
			}
		}
		s.queue = keep
	}
}

// offer asks the scheduler to place queue entry k; it returns 1 if placed.
func (s *Sim) offer(k, queueLen int) int {
	id := s.queue[k]
	r := &s.jobs[id]
	if r.waitEpoch == s.epoch+1 {
		return 0 // nothing freed since it last waited
	}
	o := &s.obs
	j := &s.w.Jobs[id]
	o.State, o.Time = s.state, s.now
	o.Job, o.Req, o.Queue = j, s.state.Request(j), queueLen
	// A shape that could not be placed earlier in this pass cannot be now.
	if slices.Contains(s.failed, o.Req) {
		r.waitEpoch = s.epoch + 1
		return 0
	}
	a := s.sched.Decide(o, s.rngSched)
	if a.Node < 0 {
		r.waitEpoch = s.epoch + 1
		if len(s.failed) < 64 {
			s.failed = append(s.failed, o.Req)
		}
		return 0
	}
	if a.Node >= len(s.c.Machines) || !s.state.Fits(a.Node, &o.Req) {
		s.acc.invalidDecisions++
		return 0
	}
	gpu := a.GPU
	if !o.Req.Share() {
		gpu = -1
	}
	before := s.machinePower(a.Node)
	al, err := s.state.allocate(a.Node, &o.Req, gpu)
	if err != nil {
		s.acc.invalidDecisions++
		return 0
	}
	s.power += s.machinePower(a.Node) - before
	s.start(id, al)
	s.queue[k] = -1
	return 1
}

func (s *Sim) start(id int, al Alloc) {
	r := &s.jobs[id]
	j := &s.w.Jobs[id]
	wait := s.now - r.queuedAt
	if r.firstRun < 0 {
		r.firstRun = s.now
		s.acc.waits = append(s.acc.waits, s.now-j.Arrival)
		if j.Kind == Service && j.LatencySLO > 0 {
			s.judge(id, s.now-j.Arrival > j.LatencySLO)
		}
	}
	if wait > s.cfg.StarveAfter && !r.starved {
		r.starved = true
		s.acc.starved++
	}
	r.state = running
	r.alloc = al
	r.start = s.now
	r.end = s.now + j.Duration
	r.run++
	s.nrunning++
	s.onMach[al.Machine] = append(s.onMach[al.Machine], id)
	heap.Push(&s.running, endEntry{end: r.end, id: int32(id), run: r.run})
}

// refreshFrag recomputes one machine's fragmentation contribution.
func (s *Sim) refreshFrag(i int) {
	s.frag -= s.nodeFrag[i]
	s.nodeFrag[i] = s.state.MachineFrag(i)
	s.frag += s.nodeFrag[i]
	s.fragVer[i] = s.state.Ver[i]
}

// sampleFrag brings the fragmentation total up to date (only machines whose
// version moved are recomputed) and records a sample.
func (s *Sim) sampleFrag() {
	for i := range s.fragVer {
		if s.fragVer[i] != s.state.Ver[i] {
			s.refreshFrag(i)
		}
	}
	var idle int64
	if s.state.CapGPU > 0 {
		idle = s.state.CapGPU - s.state.UsedGPU
		s.acc.fragRate += s.frag / float64(s.state.CapGPU)
		if idle > 0 {
			s.acc.fragRatio += s.frag / float64(idle)
		}
	}
	s.acc.fragSamples++
}

// integrate accumulates the time integrals of utilisation, power and queue
// length over dt seconds of constant state.
func (s *Sim) integrate(dt float64) {
	st := s.state
	if st.CapCPU > 0 {
		s.acc.cpu += dt * float64(st.UsedCPU) / float64(st.CapCPU)
	}
	if st.CapMem > 0 {
		s.acc.mem += dt * float64(st.UsedMem) / float64(st.CapMem)
	}
	if st.CapGPU > 0 {
		s.acc.gpu += dt * float64(st.UsedGPU) / float64(st.CapGPU)
	}
	s.acc.energyJ += dt * s.power
	s.acc.queue += dt * float64(len(s.queue))
	s.acc.time += dt
}
