package env

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// This file holds the live model: a Sim driven by events from a running
// cluster (jobs started and stopped, machines down and up, usage measured,
// time advanced) instead of by a workload and a scheduler, so that a
// real-time service can ask any Scheduler what it would do for a pending
// job in the same state the simulator would show it. It stays pure like the
// rest of env: no I/O, goroutines or clocks; the caller owns time.

// Live is a simulation driven by a running cluster's events: the model
// behind the real-time scheduling service. It starts empty (no workload);
// the caller reports jobs started and stopped, machines going down and up,
// measured usage and the queue, and advances time. Decide asks any
// Scheduler for an action on a pending job in the state the simulator
// would show it, without placing the job: the caller places it with a
// later Start.
//
// Time moves in ticks as in Sim.Step, and events belong to the tick that
// Advance last opened: Stop and SetMachineUp(false) act like the
// simulator's completions and failures (before the tick's token decay and
// controller update), Start like its placements (after them). The
// potential field, the load history, fragmentation and the reward are
// recorded when the tick closes, at the next Advance, so decisions between
// two Advances see what the simulator's decisions of that tick see. The
// live model never completes, kills, moves or preempts jobs by itself: the
// real cluster does, and reports it.
//
// A Live is not safe for concurrent use.
type Live struct {
	s *Sim
	// keys[id] is the caller's key of job slot id (its Job.ID when
	// started), the usage model's hash input.
	keys    []int
	free    []int32 // stopped slots, reused by Start
	scratch int     // the slot that holds the job being decided
	open    bool    // a tick is open: its closing work is still due
	settled bool    // the open tick's token decay and controller ran
	stats   LiveStats
}

// LiveStats counts what a live model has seen.
type LiveStats struct {
	Started, Stopped int
	// Invalid counts decisions that named a machine the job does not
	// fit; Projected those the safety layer moved to the nearest safe
	// machine (or refused: then the action is Wait).
	Invalid, Projected int
}

// liveScheduler stands in for a scheduler in the Sim under a Live, which
// never schedules by itself.
type liveScheduler struct{}

func (liveScheduler) Name() string                           { return "live" }
func (liveScheduler) Decide(*Observation, *rand.Rand) Action { return Wait }

// maxLiveIndex bounds job services and job slots of a live model.
const maxLiveIndex = 1 << 24

// NewLive builds an empty live model of cluster c. target is the typical
// job mix that GPU fragmentation is measured against (FGD's target
// workload; the Langevin energy's fragmentation term uses it): a sample of
// the cluster's recent jobs, or a synthetic workload. cfg.TEG nil means
// DefaultTEG (no moves, no controller: the real cluster moves nothing by
// itself). Machine failures are never simulated (MTBF is ignored).
func NewLive(c *Cluster, target []Job, cfg SimConfig) (*Live, error) {
	if cfg.TEG == nil {
		t := DefaultTEG
		cfg.TEG = &t
	}
	cfg.MTBF = -1
	s, err := NewSim(c, &Workload{Name: "live"}, liveScheduler{}, cfg)
	if err != nil {
		return nil, fmt.Errorf("live model: %w", err)
	}
	if len(target) > 0 {
		for i := range target {
			if err := target[i].Validate(); err != nil {
				return nil, fmt.Errorf("live model: target workload: %w", err)
			}
		}
		s.state.Target = NewTargetWorkload(target, s.state)
		for i := range c.Machines {
			s.refreshFrag(i)
		}
	}
	l := &Live{s: s, scratch: -1, settled: true}
	l.scratch = l.newSlot()
	return l, nil
}

// Sim returns the simulation behind the model (read-only for callers;
// mutate it only through Live).
func (l *Live) Sim() *Sim { return l.s }

// State returns the cluster's allocation state (read-only for callers).
func (l *Live) State() *State { return l.s.state }

// Cluster returns the cluster.
func (l *Live) Cluster() *Cluster { return l.s.c }

// Now returns the model's time in seconds.
func (l *Live) Now() float64 { return l.s.now }

// Ticks returns the ticks advanced.
func (l *Live) Ticks() int { return l.s.ticks }

// Running returns the number of running jobs.
func (l *Live) Running() int { return l.s.nrunning }

// Stats returns the model's counters.
func (l *Live) Stats() LiveStats { return l.stats }

// Job returns running job id's description (read-only), or nil when id
// is not a running job.
func (l *Live) Job(id int) *Job {
	if id < 0 || id >= len(l.s.jobs) || l.s.jobs[id].state != running {
		return nil
	}
	return &l.s.w.Jobs[id]
}

// Machine returns the machine running job id, -1 when it is not running.
func (l *Live) Machine(id int) int {
	if l.Job(id) == nil {
		return -1
	}
	return l.s.jobs[id].alloc.Machine
}

// newSlot returns a free job slot, growing the tables when none is free.
func (l *Live) newSlot() int {
	s := l.s
	if n := len(l.free); n > 0 {
		id := int(l.free[n-1])
		l.free = l.free[:n-1]
		return id
	}
	id := len(s.w.Jobs)
	s.w.Jobs = append(s.w.Jobs, Job{ID: id, Service: -1})
	s.jobs = append(s.jobs, jobRec{firstRun: -1, migrIdx: -1})
	l.keys = append(l.keys, 0)
	return id
}

// fill puts j into slot id as a job that has not started: versions carry
// over from the slot's previous job, so that its stale heap entries stay
// stale.
func (l *Live) fill(id int, j *Job) {
	s := l.s
	old := &s.jobs[id]
	seq, useVer := old.seq, old.useVer
	l.keys[id] = j.ID
	s.w.Jobs[id] = *j
	s.w.Jobs[id].ID = id
	s.jobs[id] = jobRec{firstRun: -1, migrIdx: -1, seq: seq, useVer: useVer}
	s.jobs[id].tenant = int32(s.tok.index(j.Tenant))
	l.ensureService(j.Service)
}

// ensureService grows the per-service tables to hold service svc.
func (l *Live) ensureService(svc int) {
	t := &l.s.tok
	for svc >= len(t.affinity) {
		t.affinity = append(t.affinity, 0)
		t.replicas = append(t.replicas, 0)
		t.serviceLive = append(t.serviceLive, 0)
		t.svcRacks = append(t.svcRacks, nil)
	}
}

// checkJob validates a job the caller reports.
func (l *Live) checkJob(j *Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	switch {
	case j.Service < -1 || j.Service >= maxLiveIndex:
		return fmt.Errorf("job %d (%s): service %d outside [-1, %d)", j.ID, j.Name, j.Service, maxLiveIndex)
	case math.IsNaN(j.Duration) || math.IsInf(j.Duration, 0) || math.IsNaN(j.Arrival) || math.IsInf(j.Arrival, 0):
		return fmt.Errorf("job %d (%s): arrival %v and duration %v must be finite", j.ID, j.Name, j.Arrival, j.Duration)
	case j.Arrival > l.s.now:
		return fmt.Errorf("job %d (%s): arrival %v s is after the model's time %v s", j.ID, j.Name, j.Arrival, l.s.now)
	case !(j.Deadline >= 0) || !(j.LatencySLO >= 0) || math.IsInf(j.Deadline, 0) || math.IsInf(j.LatencySLO, 0):
		return fmt.Errorf("job %d (%s): deadline %v s and latency SLO %v s must be finite and >= 0", j.ID, j.Name, j.Deadline, j.LatencySLO)
	case math.IsInf(j.NetGbps, 0):
		return fmt.Errorf("job %d (%s): network %v Gbit/s must be finite", j.ID, j.Name, j.NetGbps)
	}
	return nil
}

// Advance moves time on by ticks ticks of SimConfig.Tick seconds: it
// closes the open tick (field, history, fragmentation, reward), then for
// each tick integrates the metrics, reaches memory plateaus, decays tokens
// and updates the damping controller, leaving the last tick open for the
// events that follow. A long advance (more ticks than the history and the
// field's staleness span) jumps over the bulk at once, the way the
// simulator skips idle ticks.
func (l *Live) Advance(ticks int) {
	if ticks <= 0 {
		return
	}
	s := l.s
	span := HistoryLen + s.teg.FieldEvery + s.teg.Staleness + 1
	if ticks > span {
		l.close()
		k := ticks - span
		dt := s.cfg.Tick
		l.settle()
		s.integrate(dt, k)
		s.tok.decay(float64(k) * dt)
		s.now += float64(k) * dt
		s.ticks += k
		l.drain()
		s.ctl.observe(s.phi())
		s.tickJudged, s.tickMet = 0, 0
		s.reward(k)
		ticks = span
	}
	for ; ticks > 0; ticks-- {
		l.close()
		dt := s.cfg.Tick
		s.integrate(dt, 1)
		s.now += dt
		s.ticks++
		s.tickJudged, s.tickMet = 0, 0
		l.drain()
		l.open, l.settled = true, false
	}
}

// AdvanceTo advances whole ticks up to time t (s) and returns how many;
// a time in the past advances nothing.
func (l *Live) AdvanceTo(t float64) int {
	s := l.s
	if !(t > s.now) || math.IsInf(t, 0) {
		return 0
	}
	k := math.Floor((t - s.now) / s.cfg.Tick * (1 + 1e-12))
	if k <= 0 {
		return 0
	}
	n := int(min(k, float64(math.MaxInt32)))
	l.Advance(n)
	return n
}

// drain processes the timed entries that are due: memory plateaus move to
// the plateau aggregates as in Step; memory alarms and planned completions
// are dropped, since the real cluster decides those (the safety layer's
// admission filter reads the aggregates directly).
func (l *Live) drain() {
	s := l.s
	t := s.now
	for s.sats.Len() > 0 && s.sats.Peek().t <= t {
		e := s.sats.Pop()
		if r := &s.jobs[e.id]; r.state == running && r.useVer == e.ver && !r.saturated {
			s.saturate(int(e.id))
			s.epoch++
		}
	}
	for s.alarms.Len() > 0 && s.alarms.Peek().t <= t {
		s.alarms.Pop()
	}
	for s.ends.Len() > 0 && s.ends.Peek().t <= t {
		s.ends.Pop()
	}
	// Rates that change push new completion entries and leave the old ones
	// in the heap until their time; jobs that run far longer than planned
	// could pile them up. Rebuild when stale entries dominate.
	if n := s.ends.Len(); n > 1024 && n > 4*s.nrunning {
		items := s.ends.items
		s.ends.items = items[:0:0]
		for _, e := range items {
			if r := &s.jobs[e.id]; r.state == running && r.seq == e.ver {
				s.ends.Push(e)
			}
		}
	}
}

// settle runs the open tick's token decay and controller update once,
// before the first placement or decision of the tick.
func (l *Live) settle() {
	if l.settled {
		return
	}
	l.settled = true
	s := l.s
	s.tok.decay(s.cfg.Tick)
	if s.teg.Controller {
		s.ctl.update(s.phi())
	} else {
		s.ctl.observe(s.phi())
	}
}

// EndTick closes the open tick now instead of at the next Advance: the
// field, fragmentation, reward and load history record the tick's events.
// Events until the next Advance still belong to the closed tick.
func (l *Live) EndTick() { l.close() }

// close finishes the open tick: field, fragmentation sample, reward and
// load history, as at the end of Step.
func (l *Live) close() {
	if !l.open {
		return
	}
	l.settle()
	s := l.s
	s.refreshField()
	if s.cfg.FragEvery > 0 && s.ticks%s.cfg.FragEvery == 0 {
		s.sampleFrag()
	}
	s.reward(1)
	s.recordHistory()
	l.open = false
}

// Start runs job j on machine (GPU gpu of it for a share job; -1 picks the
// best-fit GPU; whole-GPU jobs take the lowest-indexed free GPUs) from now
// on and returns its slot ID, which Stop and SetUsage take. j.ID is the
// caller's stable key of the job: with the model's seed it draws the job's
// usage, as the simulator draws it from the job's workload ID. The job must
// fit the machine (State.Fits); the safety layer is not consulted, since
// the job runs there already.
func (l *Live) Start(j *Job, machine, gpu int) (int, error) {
	if err := l.checkJob(j); err != nil {
		return -1, err
	}
	s := l.s
	if machine < 0 || machine >= len(s.c.Machines) {
		return -1, fmt.Errorf("job %d (%s): machine %d out of range [0, %d)", j.ID, j.Name, machine, len(s.c.Machines))
	}
	req := s.state.Request(j)
	if !s.state.Fits(machine, &req) {
		m := &s.state.M[machine]
		return -1, fmt.Errorf("job %d (%s): does not fit machine %d (%s): up %v, free cpu %d, memory %d MiB, %d full GPUs, %d idle milli-GPU; wants cpu %d, memory %d MiB, %d GPUs of %d milli",
			j.ID, j.Name, machine, s.c.Machines[machine].Name, m.Up, m.FreeCPU, m.FreeMem, m.FullFree, m.IdleGPU, req.CPU, req.Mem, req.GPUs, req.Milli)
	}
	if req.Share() && gpu >= 0 {
		if gs := s.state.GPUs(machine); gpu >= len(gs) || gs[gpu] < req.Milli {
			return -1, fmt.Errorf("job %d (%s): GPU %d of machine %d (%s) cannot host %d milli", j.ID, j.Name, gpu, machine, s.c.Machines[machine].Name, req.Milli)
		}
	}
	l.settle()
	id := l.newSlot()
	l.fill(id, j)
	r := &s.jobs[id]
	key := *j // the usage model hashes the caller's key
	r.starts = 1
	r.use = drawUsage(s.cfg.Seed, &key, r.starts, s.now, &s.teg)
	r.start, r.mark, r.firstRun, r.queuedAt = s.now, s.now, s.now, s.now
	r.work = j.Duration
	if err := s.place(id, machine, gpu, false); err != nil {
		s.jobs[id].state = notArrived
		l.free = append(l.free, int32(id))
		return -1, fmt.Errorf("job %d (%s): %w", j.ID, j.Name, err)
	}
	if svc := j.Service; svc >= 0 {
		s.tok.replicas[svc]++
	}
	l.stats.Started++
	return id, nil
}

// Stop ends running job id (completed, killed or deleted in the real
// cluster) and frees its slot.
func (l *Live) Stop(id int) error {
	s := l.s
	if id < 0 || id >= len(s.jobs) || id == l.scratch || s.jobs[id].state != running {
		return fmt.Errorf("job slot %d is not running", id)
	}
	s.stop(id)
	s.jobs[id].state = completed
	if svc := s.w.Jobs[id].Service; svc >= 0 {
		s.tok.replicas[svc]--
	}
	l.free = append(l.free, int32(id))
	l.stats.Stopped++
	return nil
}

// SetUsage replaces running job id's usage model with a measurement: it
// uses cpu and mem as fractions of its CPU and memory requests from now
// on (a plateau; bursts above 1 are allowed). Power, contention, the
// memory barrier and the field follow at once or at the next field.
func (l *Live) SetUsage(id int, cpu, mem float64) error {
	s := l.s
	if id < 0 || id >= len(s.jobs) || id == l.scratch || s.jobs[id].state != running {
		return fmt.Errorf("job slot %d is not running", id)
	}
	if !(cpu >= 0) || !(mem >= 0) || math.IsInf(cpu, 0) || math.IsInf(mem, 0) {
		return fmt.Errorf("job slot %d: usage cpu %v, memory %v must be finite and >= 0", id, cpu, mem)
	}
	r := &s.jobs[id]
	i := r.alloc.Machine
	s.addUsage(id, i, -1)
	r.use = usage{cpu: cpu, f0: mem, ceil: mem, t0: s.now, tsat: s.now}
	r.saturated = true
	r.useVer++ // drops its pending plateau entry
	s.addUsage(id, i, +1)
	s.repower(i)
	s.rerate(i)
	s.armAlarm(i)
	// Usage is not part of State; bumping the version makes caches keyed
	// on it (observation rows, fragmentation) look at the machine again.
	s.state.M[i].Ver++
	return nil
}

// SetMachineUp marks machine i up or down. A machine that goes down
// loses its jobs: they are stopped (in ID order) and returned, so that the
// caller can forget them.
func (l *Live) SetMachineUp(i int, up bool) ([]int, error) {
	s := l.s
	if i < 0 || i >= len(s.c.Machines) {
		return nil, fmt.Errorf("machine %d out of range [0, %d)", i, len(s.c.Machines))
	}
	if s.state.M[i].Up == up {
		return nil, nil
	}
	var stopped []int
	if !up {
		for _, id := range s.onMach[i] {
			stopped = append(stopped, int(id))
		}
		slices.Sort(stopped)
		for _, id := range stopped {
			if err := l.Stop(id); err != nil {
				return stopped, err
			}
		}
	}
	s.state.setUp(i, up)
	s.repower(i)
	s.refreshFrag(i)
	if up {
		s.epoch++
	} else {
		s.armAlarm(i)
	}
	return stopped, nil
}

// LiveQueue summarises the jobs waiting in the real cluster's queue: the
// order parameter of the damping controller, the queue features of the
// observation and the reward's latency term read it.
type LiveQueue struct {
	Jobs     int     // pending jobs
	CPU      int64   // their CPU requests, millicores
	GPU      int64   // their GPU requests, milli-GPU
	MeanWait float64 // their mean wait so far, s
}

// SetQueue reports the queue. The live model holds no queued jobs of its
// own, only this summary.
func (l *Live) SetQueue(q LiveQueue) error {
	if q.Jobs < 0 || q.CPU < 0 || q.GPU < 0 || !(q.MeanWait >= 0) || math.IsInf(q.MeanWait, 0) {
		return fmt.Errorf("queue %+v: counts and wait must be >= 0 and finite", q)
	}
	s := l.s
	s.tq.n = q.Jobs
	s.ctl.queuedCPU, s.ctl.queuedGPU = float64(q.CPU), float64(q.GPU)
	s.queuedArrivalSum = float64(q.Jobs) * (s.now - q.MeanWait)
	return nil
}

// pending puts j into the scratch slot as the job being decided and
// returns it there.
func (l *Live) pending(j *Job) *Job {
	l.settle()
	l.fill(l.scratch, j)
	return &l.s.w.Jobs[l.scratch]
}

// Verdict says what became of a scheduler's action.
type Verdict uint8

const (
	// Placed: the action names a machine the job fits and the safety
	// layer admits.
	Placed Verdict = iota
	// Waited: the scheduler chose to wait (or no machine admits the job).
	Waited
	// Projected: the safety layer moved the placement to the nearest safe
	// machine of the rack, as the simulator does.
	Projected
	// Invalid: the machine is out of range or the job does not fit it; the
	// action became Wait.
	Invalid
)

var verdictNames = [...]string{"placed", "waited", "projected", "invalid"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Decide asks sched for its action on pending job j (not placed, nor
// queued in the model: described from its own fields as if it had arrived
// at j.Arrival; Job.ID is ignored) in the current state, checked as the
// simulator checks it: a machine the job does not fit becomes Wait
// (Invalid), and one the safety layer refuses is projected onto the
// nearest safe machine of its rack, or Wait. Nothing is placed, and the
// governor's knobs are left alone (see ApplyKnobs). rng is the
// scheduler's random stream.
func (l *Live) Decide(j *Job, sched Scheduler, rng *rand.Rand) (Action, Verdict, error) {
	if err := l.checkJob(j); err != nil {
		return Wait, Invalid, err
	}
	s := l.s
	p := l.pending(j)
	o := &s.obs
	o.State, o.Time = s.state, s.now
	o.Job, o.Req, o.Queue = p, s.state.Request(p), max(s.tq.n, 1)
	s.view.refresh()
	a := sched.Decide(o, rng)
	if a.Node < 0 {
		return a, Waited, nil
	}
	if a.Node >= len(s.c.Machines) || !s.state.Fits(a.Node, &o.Req) {
		l.stats.Invalid++
		w := Wait
		w.ReplicaDelta, w.Affinity, w.Damping = a.ReplicaDelta, a.Affinity, a.Damping
		return w, Invalid, nil
	}
	if !s.safeStart(l.scratch, a.Node) {
		l.stats.Projected++
		a.Node, a.GPU = s.project(l.scratch, a.Node), -1
		return a, Projected, nil
	}
	return a, Placed, nil
}

// ApplyKnobs applies the governor's part of an action decided for job j,
// as the simulator does on every offer: a damping that is not NaN
// overrides the controller, and a service's affinity weight is set. The
// placement and the replica delta are the caller's to carry out.
func (l *Live) ApplyKnobs(j *Job, a Action) {
	s := l.s
	l.settle()
	if !math.IsNaN(float64(a.Damping)) {
		s.ctl.override(float64(a.Damping))
	}
	if svc := j.Service; svc >= 0 && svc < maxLiveIndex {
		l.ensureService(svc)
		aff := float64(a.Affinity)
		if !(aff >= 0) {
			aff = 0
		}
		s.tok.affinity[svc] = float32(min(1, aff))
	}
}

// Observe refreshes t with the current state and pending job j (nil: none)
// as Sim.Observe does; j is described as Decide describes it.
func (l *Live) Observe(t *Tensors, j *Job) error {
	if j == nil {
		l.settle()
		l.s.Observe(t, nil)
		return nil
	}
	if err := l.checkJob(j); err != nil {
		return err
	}
	l.s.Observe(t, l.pending(j))
	return nil
}

// Request resolves j against the cluster.
func (l *Live) Request(j *Job) Request { return l.s.state.Request(j) }

// Energies writes to out, for each machine of machines, the Langevin energy
// E_j(i) of pending job j on it (the potential with the job added on the
// agents' field, fragmentation, affinity and gang terms), or +Inf where the
// job is not admitted (State.Admit), and returns out.
func (l *Live) Energies(j *Job, machines []int, out []float64) ([]float64, error) {
	if err := l.checkJob(j); err != nil {
		return out, err
	}
	s := l.s
	p := l.pending(j)
	req := s.state.Request(p)
	s.view.refresh()
	f := s.visibleField()
	for _, i := range machines {
		if i < 0 || i >= len(s.c.Machines) || !s.state.Admit(i, &req) {
			out = append(out, math.Inf(1))
			continue
		}
		out = append(out, s.view.energy(f, p, &req, i))
	}
	return out, nil
}
