package env

import (
	"fmt"
	"math"
)

// This file holds the TEG mechanisms that act on running jobs: contention
// and progress, the memory barrier and OOM, Langevin moves, the Nash gap
// and the per-tick reward.

// progress brings a running job's remaining work up to date.
func (s *Sim) progress(r *jobRec) {
	if s.now > r.mark {
		r.work = max(0, r.work-r.rate*(s.now-r.mark))
		r.mark = s.now
	}
}

// jobRate is job id's progress rate on machine i (docs/teg.md §7): CPU
// oversubscription slows everyone on the machine, GPU sharers interfere,
// gangs split across NVLink groups run slower.
func (s *Sim) jobRate(id, i int) float64 {
	if !s.teg.Contention {
		return 1
	}
	r := &s.jobs[id]
	h := &s.ld.hot[i]
	rate := 1 / (1 + max(0, s.ld.cpuUse[i]/h.cpu-1))
	if r.alloc.GPUMask != 0 && r.alloc.Milli < MilliGPU {
		// Share job: interference from the other jobs on its GPU.
		j := trailingZeros(r.alloc.GPUMask)
		sharers := int(s.state.Sharers(i)[j])
		rate *= max(0.5, 1-0.1*float64(sharers-1))
	}
	if spansPacked(h.groups, r.alloc.GPUMask) {
		rate *= 0.7
	}
	return rate
}

func trailingZeros(m uint32) int {
	n := 0
	for m&1 == 0 && n < 32 {
		m >>= 1
		n++
	}
	return n
}

// packGroups packs a machine's NVLink group per GPU into 4 bits each, so the
// hot paths read one word instead of the machine's group slice.
func packGroups(m *Machine) uint64 {
	var p uint64
	for j, g := range m.GPUGroup {
		p |= uint64(g&0xf) << (4 * uint(j))
	}
	return p
}

// spansPacked reports whether the GPUs in mask span more than one group.
func spansPacked(groups uint64, mask uint32) bool {
	if mask&(mask-1) == 0 {
		return false
	}
	first := -1
	for j := 0; mask != 0; j, mask = j+1, mask>>1 {
		if mask&1 == 0 {
			continue
		}
		g := int(groups>>(4*uint(j))) & 0xf
		if first < 0 {
			first = g
		} else if g != first {
			return true
		}
	}
	return false
}

// rerate recomputes the progress rates of machine i's jobs and reschedules
// the completions of those whose rate changed.
func (s *Sim) rerate(i int) {
	for _, id := range s.onMach[i] {
		r := &s.jobs[id]
		nr := s.jobRate(int(id), i)
		if nr == r.rate {
			continue
		}
		s.progress(r)
		r.rate = nr
		end := r.mark + r.work/nr
		// A later end keeps the queued entry, which re-queues itself when
		// it surfaces early; only an earlier end needs a new entry. That
		// halves the heap traffic of contention changes.
		if end < r.end {
			r.seq++
			s.ends.Push(timed{t: end, id: id, ver: r.seq})
		}
		r.end = end
	}
}

// memHeadroom is the barrier h = cap - predicted use over the horizon:
// use now plus H·GrowthMax for every job still growing.
func (s *Sim) memHeadroom(i int) float64 {
	return s.ld.hot[i].machStatic.mem - s.memUsage(i) - s.teg.Horizon*s.teg.GrowthMax*s.ld.hot[i].memAgg.grow
}

// armAlarm schedules machine i's next memory alarm: with the safety layer,
// when the barrier's headroom would reach zero; without it, when use would
// exceed the machine's memory (an OOM).
func (s *Sim) armAlarm(i int) {
	s.ld.alarmVer[i]++
	agg := &s.ld.hot[i].memAgg
	b := agg.b
	if b <= 0 || !s.state.M[i].Up {
		return
	}
	room := s.ld.hot[i].machStatic.mem - agg.a - agg.sat
	if s.teg.Safety {
		room -= s.teg.Horizon * s.teg.GrowthMax * agg.grow
	}
	t := room / b
	if math.IsInf(t, 0) || math.IsNaN(t) {
		return
	}
	s.alarms.Push(timed{t: max(t, s.now), id: int32(i), ver: s.ld.alarmVer[i]})
}

// memAlarm handles a machine whose memory alarm fired. With the safety
// layer, the youngest growing jobs are moved to a safe machine, or
// preempted back to the queue with their progress, until the barrier holds
// again: the projection of the HOCBF onto the safe set. Without it, a
// machine whose use exceeds its memory OOM-kills its youngest job.
func (s *Sim) memAlarm(i int) {
	if s.teg.Safety {
		for s.memHeadroom(i) < 0 {
			id := s.youngest(i, true)
			if id < 0 {
				break
			}
			s.acc.safetyActions++
			if !s.relocate(id) {
				s.preempt(id)
			}
		}
		s.armAlarm(i)
		return
	}
	if s.memUsage(i) > float64(s.c.Machines[i].Mem) {
		s.acc.safetyViolations++
		for s.memUsage(i) > float64(s.c.Machines[i].Mem) {
			id := s.youngest(i, false)
			if id < 0 {
				break
			}
			s.acc.oomKills++
			s.kill(id, s.now)
		}
	}
	s.armAlarm(i)
}

// youngest returns the most recently started job on machine i (only
// growing ones when growing is set), -1 if none.
func (s *Sim) youngest(i int, growing bool) int {
	best, bestStart := -1, math.Inf(-1)
	for _, id := range s.onMach[i] {
		r := &s.jobs[id]
		if growing && r.saturated {
			continue
		}
		if r.start > bestStart || (r.start == bestStart && int(id) > best) {
			best, bestStart = int(id), r.start
		}
	}
	return best
}

// preempt checkpoints a running job back to the queue, keeping its work.
func (s *Sim) preempt(id int) {
	s.stop(id)
	s.acc.preemptions++
	s.enqueue(id, s.now)
}

// memPredict is the memory the barrier assumes a job will use within the
// horizon after starting (or landing, when moving) on a machine.
func (s *Sim) memPredict(id int, moving bool) float64 {
	j := &s.w.Jobs[id]
	f := memStartMax
	if moving {
		f = s.jobs[id].use.frac(s.now)
	}
	return float64(j.Mem) * (f + s.teg.Horizon*s.teg.GrowthMax)
}

// barrierOK checks the discrete-time barrier conditions h(t+1) >=
// (1-α)·h(t), i.e. Δh <= α·h, for adding predicted memory mem and CPU cpu
// (millicores in use) and GPU gpu (milli) to machine i: machine memory and
// rack power.
func (s *Sim) barrierOK(i int, mem, cpu, gpu float64) bool {
	if !s.teg.Safety {
		return true
	}
	a := s.teg.Alpha
	// The rate condition Δh <= α·h keeps a machine from being filled in one
	// step; an empty machine has nobody to protect, so there the barrier
	// only asks h(t+1) >= 0 (else a job above α of a machine's memory could
	// never run anywhere).
	if h := s.memHeadroom(i); mem > a*h && (s.state.Jobs(i) > 0 || mem > h) {
		return false
	}
	if ms := &s.ld.hot[i].machStatic; ms.budget > 0 {
		if s.dynPower(i, cpu, gpu) > a*(ms.budget-s.ld.rackPower[ms.rack]) {
			return false
		}
	}
	return true
}

// safeNew is the barrier for a queued request: its use is not known yet,
// so the bounds of the usage model stand in (memory at most memStartMax of
// the request plus the horizon's growth, CPU at most cpuUseMax).
func (s *Sim) safeNew(i int, r *Request) bool {
	return s.barrierOK(i, float64(r.Mem)*(memStartMax+s.teg.Horizon*s.teg.GrowthMax),
		cpuUseMax*float64(r.CPU), float64(r.GPUDemand()))
}

// safeOn checks the barrier for adding job id to machine i.
func (s *Sim) safeOn(id, i int, moving bool) bool {
	if !moving {
		r := s.state.Request(&s.w.Jobs[id])
		return s.safeNew(i, &r)
	}
	j := &s.w.Jobs[id]
	rec := &s.jobs[id]
	return s.barrierOK(i, s.memPredict(id, true), rec.use.cpu*float64(j.CPU), float64(j.GPUDemand()))
}

// safeStart checks a placement of a queued job.
func (s *Sim) safeStart(id, i int) bool { return s.safeOn(id, i, false) }

// project returns the machine nearest to i (same rack first, in rack order
// from i) that fits job id and satisfies the barrier, or -1.
func (s *Sim) project(id, i int) int {
	req := s.state.Request(&s.w.Jobs[id])
	rk := s.c.Racks[s.c.Machines[i].Rack].Machines
	start := 0
	for k, m := range rk {
		if m == i {
			start = k
		}
	}
	for k := 1; k < len(rk); k++ {
		m := rk[(start+k)%len(rk)]
		if s.state.Fits(m, &req) && s.safeStart(id, m) {
			return m
		}
	}
	return -1
}

// relocate moves a running job to a safe machine chosen among the coldest
// and a few random ones; false if none fits.
func (s *Sim) relocate(id int) bool {
	req := s.state.Request(&s.w.Jobs[id])
	from := s.jobs[id].alloc.Machine
	f := s.visibleField()
	for k := 0; k < 2*s.teg.PlaceCandidates; k++ {
		var c int
		if k%2 == 0 && len(f.Cold) > 0 {
			c = int(f.Cold[s.rngTEG.IntN(len(f.Cold))])
		} else {
			c = s.rngTEG.IntN(len(s.c.Machines))
		}
		if c == from || !s.state.Fits(c, &req) || !s.safeOn(id, c, true) {
			continue
		}
		s.migrate(id, c)
		return true
	}
	return false
}

// migrate moves running job id to machine c: its memory comes along, its
// progress pauses for the migration downtime.
func (s *Sim) migrate(id, c int) {
	r := &s.jobs[id]
	s.progress(r)
	frac := r.use.frac(s.now)
	u := r.use
	s.unplace(id)
	// Continue the same usage curve from where it was.
	u.f0, u.t0 = frac, s.now
	u.tsat = s.now
	if u.g > 0 && frac < u.ceil {
		u.tsat = s.now + (u.ceil-frac)/u.g
	}
	r.use = u
	r.saturated = frac >= u.ceil
	r.mark = s.now + s.teg.MigrationDowntime
	if err := s.place(id, c, -1, false); err != nil {
		panic("env: migrate to an infeasible machine: " + err.Error()) // callers check Fits
	}
	s.acc.migrations++
}

// moves runs one tick of Langevin dynamics (docs/teg.md §3): each
// migratable running job attempts a move with probability μ0·dt/(1+D),
// picked by geometric skipping so the work is proportional to the movers.
func (s *Sim) moves() {
	n := len(s.migr)
	if n == 0 {
		return
	}
	p := min(1, s.teg.Mobility*s.cfg.Tick/(1+s.ctl.d))
	if p <= 0 {
		return
	}
	logq := math.Log1p(-p)
	for k := -1; ; {
		if p < 1 {
			k += 1 + int(math.Floor(math.Log(1-s.rngTEG.Float64())/logq))
		} else {
			k++
		}
		if k >= len(s.migr) || k < 0 {
			return
		}
		s.tryMove(int(s.migr[k]))
	}
}

// tryMove draws d candidates for job id (one uniform, the rest from the
// cold list), takes the lowest energy, and moves with the Glauber
// probability 1/(1+exp(ΔE/T_eff)), ΔE = E(c) - E(x) + m_j.
func (s *Sim) tryMove(id int) {
	r := &s.jobs[id]
	j := &s.w.Jobs[id]
	x := r.alloc.Machine
	if s.now < r.mark { // still migrating
		return
	}
	req := s.state.Request(j)
	f := s.visibleField()
	best, bestE := -1, math.Inf(1)
	for k := 0; k < s.teg.MoveCandidates; k++ {
		var c int
		if k == 0 || len(f.Cold) == 0 {
			c = s.rngTEG.IntN(len(s.c.Machines))
		} else {
			c = int(f.Cold[s.rngTEG.IntN(len(f.Cold))])
		}
		if c == x || !s.state.Fits(c, &req) {
			continue
		}
		if e := s.view.energy(f, j, &req, c); e < bestE {
			best, bestE = c, e
		}
	}
	if best < 0 {
		return
	}
	dE := bestE - s.view.energy(f, j, &req, x) + s.teg.MigrationCost
	if !s.accept(dE) || !s.safeOn(id, best, true) {
		return
	}
	s.migrate(id, best)
}

// accept is the heat-bath acceptance of an energy change at T_eff; at zero
// temperature it follows the drift only.
func (s *Sim) accept(dE float64) bool {
	t := s.view.Temperature()
	if t <= 0 {
		return dE < 0
	}
	u := s.rngTEG.Float64()
	return u < 1/(1+math.Exp(dE/t))
}

// sampleNash measures how far the placement is from a Nash equilibrium:
// for a sample of running jobs, the best energy gain of a unilateral move
// (net of the migration cost) to any feasible machine, on the newest field.
func (s *Sim) sampleNash() {
	if len(s.migr) == 0 {
		return
	}
	f := s.fields.latest
	n := len(s.c.Machines)
	maxGap, sum := 0.0, 0.0
	k := min(s.teg.NashSample, len(s.migr))
	for q := 0; q < k; q++ {
		id := int(s.migr[s.rngTEG.IntN(len(s.migr))])
		j := &s.w.Jobs[id]
		req := s.state.Request(j)
		x := s.jobs[id].alloc.Machine
		ex := s.view.energy(f, j, &req, x)
		gap := 0.0
		probe := func(c int) {
			if c == x || !s.state.Fits(c, &req) {
				return
			}
			gap = max(gap, ex-s.view.energy(f, j, &req, c)-s.teg.MigrationCost)
		}
		if n <= nashFullScan {
			for c := 0; c < n; c++ {
				probe(c)
			}
		} else {
			for _, c := range f.Cold {
				probe(int(c))
			}
			for t := 0; t < nashFullScan; t++ {
				probe(s.rngTEG.IntN(n))
			}
		}
		maxGap = max(maxGap, gap)
		sum += gap
	}
	s.acc.nashMax += maxGap
	s.acc.nashMean += sum / float64(k)
	s.acc.nashSamples++
}

// nashFullScan: up to this many machines the Nash gap scans all of them;
// beyond, the cold list and this many random machines.
const nashFullScan = 2048

// reward accumulates k ticks of the per-tick reward (docs/teg.md §9):
// r = w_s·S + w_e·(1 - P/P_max) + w_l·max(0, 1 - W/W_sla).
func (s *Sim) reward(k int) {
	w := s.teg.Reward
	succ := 1.0
	if s.tickJudged > 0 {
		succ = float64(s.tickMet) / float64(s.tickJudged)
	}
	energy := 1.0
	if s.peak > 0 {
		energy = 1 - s.power/s.peak
	}
	latency := 1.0
	if s.tq.n > 0 {
		wait := s.now - s.queuedArrivalSum/float64(s.tq.n)
		latency = max(0, 1-wait/w.WaitSLA)
	}
	r := w.Success*succ + w.Energy*energy + w.Latency*latency
	kf := float64(k)
	s.acc.reward += kf * r
	s.acc.rewardSuccess += kf * succ
	s.acc.rewardEnergy += kf * energy
	s.acc.rewardLatency += kf * latency
	s.acc.rewardTicks += k
	s.lastReward = RewardTerms{Total: r, Success: succ, Energy: energy, Latency: latency}
	s.accrued.Total += kf * r
	s.accrued.Success += kf * succ
	s.accrued.Energy += kf * energy
	s.accrued.Latency += kf * latency
	s.accrued.Slowdown += kf * s.cfg.Tick * s.inSystem
}

// RewardTerms is one tick's reward and its normalised terms.
type RewardTerms struct {
	Total, Success, Energy, Latency float64
}

// LastReward returns the reward of the last tick.
func (s *Sim) LastReward() RewardTerms { return s.lastReward }

// Accrual sums a run's per-tick rewards from its start, skipped idle
// ticks included, so that a learner can difference two readings to get the
// reward earned between two decisions.
type Accrual struct {
	RewardTerms
	// Slowdown is the integral over time of Σ 1/duration over the jobs in
	// the system (queued or running). A job that completes adds
	// JCT/duration, its slowdown, so the differences of Slowdown are the
	// per-step cost whose sum is the run's total slowdown (DeepRM's reward,
	// Mao et al. 2016), counting the jobs that have not finished yet.
	Slowdown float64
}

// Accrued returns the reward accrued since the start of the run.
func (s *Sim) Accrued() Accrual { return s.accrued }

// SlowdownRate returns the rate at which Accrued().Slowdown grows now, per
// simulated second: Σ 1/duration over the jobs in the system.
func (s *Sim) SlowdownRate() float64 { return s.inSystem }

// maxReplicas bounds a service's replicas under replica actions.
const maxReplicas = 64

// applyService applies an action's service fields to job id's service: the
// affinity weight, and the replica delta (new replicas join the queue;
// removed ones leave it, youngest first, then running ones, youngest first).
// It appends jobs, so callers must not hold pointers into s.jobs or
// s.w.Jobs across it.
func (s *Sim) applyService(id int, a Action) {
	svc := s.w.Jobs[id].Service
	if svc < 0 {
		return
	}
	if !(a.Affinity >= 0) { // NaN too
		a.Affinity = 0
	}
	s.tok.affinity[svc] = float32(min(1, float64(a.Affinity)))
	d := max(-5, min(5, a.ReplicaDelta))
	for ; d > 0 && s.tok.replicas[svc] < maxReplicas; d-- {
		clone := s.w.Jobs[id]
		clone.ID = len(s.w.Jobs)
		clone.Arrival = s.now
		clone.Name = fmt.Sprintf("%s+%d", s.w.Jobs[id].Name, clone.ID)
		s.w.Jobs = append(s.w.Jobs, clone)
		// A replica does the service's full work: it does not pass through
		// arrive, which sets the work of workload jobs.
		s.jobs = append(s.jobs, jobRec{firstRun: -1, migrIdx: -1, work: clone.Duration})
		s.acc.submitted++
		s.acc.replicasAdded++
		s.tok.replicas[svc]++
		s.jobs[clone.ID].tenant = int32(s.tok.index(clone.Tenant))
		s.inSystem += 1 / max(clone.Duration, 1)
		s.enqueue(clone.ID, s.now)
	}
	for ; d < 0 && s.tok.replicas[svc] > 1; d++ {
		victim := s.tq.findService(s, svc, id)
		if victim >= 0 {
			s.tq.remove(victim)
			s.dequeued(victim)
		} else if victim = s.youngestReplica(svc, id); victim >= 0 {
			s.stop(victim)
		} else {
			break
		}
		s.jobs[victim].state = cancelled
		s.leave(victim)
		s.tok.replicas[svc]--
		s.acc.replicasRemoved++
	}
}

// youngestReplica returns the most recently started running replica of a
// service other than except, -1 if none. O(running agents); replica
// removal is rare.
func (s *Sim) youngestReplica(svc, except int) int {
	best, bestStart := -1, math.Inf(-1)
	for id := range s.jobs {
		r := &s.jobs[id]
		if id == except || r.state != running || s.w.Jobs[id].Service != svc {
			continue
		}
		if r.start > bestStart {
			best, bestStart = id, r.start
		}
	}
	return best
}
