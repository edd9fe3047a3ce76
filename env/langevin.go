package env

import (
	"math"
	"math/rand/v2"
)

// TEGView is what a scheduler sees of the governor: the configuration, the
// (stale) potential field, the damping and the temperature, and the energy
// and safety of a placement. It is valid during Decide only.
type TEGView struct {
	Config *TEGConfig
	// Field is the agents' copy of the potential (Staleness ticks old).
	Field *Field
	// Damping is the global damping D; Phi the order parameter.
	Damping, Phi float64
	// Draws is how many machines the last Candidates call examined.
	Draws int
	sim   *Sim
	pre   []int // the first draws of Candidates
}

func (v *TEGView) refresh() {
	s := v.sim
	v.Field = s.visibleField()
	v.Damping = s.ctl.d
	v.Phi = s.ctl.last
}

// Temperature is T_eff = γ0/(1+D).
func (v *TEGView) Temperature() float64 {
	return v.Config.Gamma0 / (1 + v.sim.ctl.d)
}

// Energy is E_j(i) = V_i - a_j·A_j(i) + g_j·X_j(i) on the agents' field
// (docs/teg.md §2).
func (v *TEGView) Energy(j *Job, r *Request, i int) float64 {
	return v.energy(v.sim.visibleField(), j, r, i)
}

// EnergyFrag is Energy and FragAdded of one placement at once: the
// energy's fragmentation term is what FragAdded reports, so it is
// computed once (a learned policy's featurizer reads both).
func (v *TEGView) EnergyFrag(j *Job, r *Request, i int) (e, frag float64) {
	return v.energyFrag(v.sim.visibleField(), j, r, i, true)
}

func (v *TEGView) energy(f *Field, j *Job, r *Request, i int) float64 {
	e, _ := v.energyFrag(f, j, r, i, false)
	return e
}

// energyFrag is the energy of placing j on i on field f and, with
// wantFrag, FragAdded(j, r, i).
func (v *TEGView) energyFrag(f *Field, j *Job, r *Request, i int, wantFrag bool) (e, frag float64) {
	s := v.sim
	rec := &s.jobs[j.ID]
	ms := &s.ld.hot[i].machStatic
	rack := int(ms.rack)
	if rec.state == running && rec.alloc.Machine == i {
		e = float64(f.V[i]) // its own load is already in the field
	} else {
		// The potential i would have with the job's load added.
		cpu, mem := 0.75*float64(j.CPU), memStartMax*float64(j.Mem)
		if rec.state == running {
			cpu, mem = rec.use.cpu*float64(j.CPU), rec.use.frac(s.now)*float64(j.Mem)
		}
		dg := 0.0
		if ms.gpus > 0 {
			dg = float64(r.GPUDemand()) / float64(ms.gpus*MilliGPU)
		}
		dk, dp := 0.0, 0.0
		if rec.state != running || int(s.ld.hot[rec.alloc.Machine].machStatic.rack) != rack {
			if ms.uplink > 0 {
				dk = j.NetGbps / ms.uplink
			}
			if ms.budget > 0 {
				dp = s.dynPower(i, cpu, float64(r.GPUDemand())) / ms.budget
			}
		}
		e = potentialWith(&v.Config.Weights, f, i, rack, cpu/ms.cpu, mem/ms.mem, dg, dk, dp)
	}
	// FragAdded's value is the term's fragAdded, for jobs with GPUs.
	wantFrag = wantFrag && r.GPUs != 0 && ms.gpus > 0 && s.state.Target != nil
	if wf := v.Config.Weights.Frag; wf > 0 && ms.gpus > 0 && s.state.Target != nil {
		fa := s.fragAdded(rec, r, i)
		e += wf * fa / MilliGPU
		if wantFrag {
			frag, wantFrag = fa, false
		}
	}
	if wantFrag {
		frag = s.fragAdded(rec, r, i)
	}
	if j.Service >= 0 {
		if a := s.tok.affinity[j.Service]; a > 0 {
			e -= float64(a) * s.tok.rackShare(j.Service, rack)
		}
	}
	if r.GPUs > 1 && v.Config.GangPenalty > 0 {
		if rec.state == running && rec.alloc.Machine == i {
			if spansPacked(ms.groups, rec.alloc.GPUMask) {
				e += v.Config.GangPenalty
			}
		} else if gangSplitsPacked(s.state, i, r, ms.groups) {
			e += v.Config.GangPenalty
		}
	}
	return e, frag
}

// Contention predicts, under the contention model (docs/teg.md §7), the
// progress rate job j would start with on machine i and the CPU
// oversubscription (use above capacity, as a fraction) the machine would
// then have, which slows every job on it. The job's CPU use is taken at
// its expected start (3/4 of the request), as in the energy.
func (v *TEGView) Contention(j *Job, r *Request, i int) (rate, oversub float64) {
	s := v.sim
	if !s.teg.Contention {
		return 1, 0
	}
	h := &s.ld.hot[i]
	oversub = max(0, (s.ld.cpuUse[i]+0.75*float64(j.CPU))/h.cpu-1)
	rate = 1 / (1 + oversub)
	st := s.state
	if r.Share() {
		if g := st.BestFitGPU(i, r.Milli); g >= 0 {
			sharers := int(st.Sharers(i)[g]) + 1
			rate *= max(0.5, 1-0.1*float64(sharers-1))
		}
	}
	if r.GPUs > 1 && gangSplitsPacked(st, i, r, h.groups) {
		rate *= 0.7
	}
	return rate, oversub
}

// FragAdded is the GPU fragmentation (milli-GPU, FGD's F_i(M)) that job j
// would add to machine i: a learned policy's view of the energy's
// fragmentation term.
func (v *TEGView) FragAdded(j *Job, r *Request, i int) float64 {
	if r.GPUs == 0 || v.sim.state.Target == nil || v.sim.c.Machines[i].GPUs == 0 {
		return 0
	}
	return v.sim.fragAdded(&v.sim.jobs[j.ID], r, i)
}

// fragAdded is the GPU fragmentation F_i(M) (milli-GPU) that the job adds
// to machine i: with the job there minus without it. For a running job on
// its own machine that is what leaving would remove; elsewhere, what
// arriving (on the GPUs the allocator would pick) would add.
func (s *Sim) fragAdded(rec *jobRec, r *Request, i int) float64 {
	tw := s.state.Target
	gs := s.state.GPUs(i)
	tmp := append(s.fragTmp[:0], gs...)
	s.fragTmp = tmp
	cpu := s.state.M[i].FreeCPU
	model := s.state.Model(i)
	// F_i(M) now is cached per machine version (the fragmentation metric
	// keeps it); refreshing it here changes no result, only when it is done.
	if s.ld.hot[i].fc.ver != s.state.M[i].Ver {
		s.refreshFrag(i)
	}
	here := s.ld.hot[i].fc.val
	if rec.state == running && rec.alloc.Machine == i {
		for mask, k := rec.alloc.GPUMask, 0; mask != 0; mask, k = mask>>1, k+1 {
			if mask&1 != 0 {
				tmp[k] += rec.alloc.Milli
			}
		}
		return here - tw.NodeFrag(cpu+rec.alloc.CPU, model, tmp)
	}
	takeRequestGPUs(tmp, s.state, i, r, -1)
	return tw.NodeFrag(cpu-r.CPU, model, tmp) - here
}

// gangSplits reports whether the lowest-indexed fully free GPUs the
// allocator would give r on machine i span NVLink groups (X_j = 1).
func gangSplits(st *State, i int, r *Request) bool {
	return gangSplitsPacked(st, i, r, packGroups(&st.C.Machines[i]))
}

// gangSplitsPacked is gangSplits with the machine's packed groups.
func gangSplitsPacked(st *State, i int, r *Request, groups uint64) bool {
	need := r.GPUs
	var mask uint32
	for j, g := range st.GPUs(i) {
		if need == 0 {
			break
		}
		if g == MilliGPU {
			mask |= 1 << uint(j)
			need--
		}
	}
	return spansPacked(groups, mask)
}

// Langevin is the pure Langevin governor: the TEG with no learning. A new
// job goes to one of d candidate machines (half from the field's coldest
// list, half uniform) drawn with probability ∝ exp(-E/T_eff) among those
// that fit and pass the barrier; running jobs drift and diffuse on the
// field (the simulator's moves, on under GovernorTEG("langevin")), and the
// Landau controller sets the damping. A decision costs O(d), whatever the
// cluster size.
type Langevin struct {
	cand []int
	e    []float64
}

// Name implements Scheduler.
func (*Langevin) Name() string { return "langevin" }

// Decide implements Scheduler.
func (p *Langevin) Decide(obs *Observation, rng *rand.Rand) Action {
	v := obs.TEG
	if v == nil || v.Field == nil {
		return Wait // outside a TEG simulation there is no field
	}
	r := &obs.Req
	p.cand = v.candidates(obs.Job, r, v.Config.PlaceCandidates, rng, p.cand[:0])
	p.e = p.e[:0]
	for _, c := range p.cand {
		p.e = append(p.e, v.Energy(obs.Job, r, c))
	}
	a := Wait
	a.Affinity = v.Config.Affinity
	if len(p.cand) == 0 {
		return a
	}
	a.Node = p.cand[boltzmann(p.e, v.Temperature(), rng)]
	return a
}

// Candidates appends to dst up to d distinct machines that admit r (fit and
// pass the safety barrier): half drawn from the field's cold list, half
// uniform among the machines whose capacity could hold r, with at most 2d
// draws, so a crowded cluster gets a second chance before the job waits.
// It is the O(d) candidate set of the langevin scheduler, shared by the
// learned policies so that their decisions cost O(1) in cluster size too.
func (v *TEGView) Candidates(r *Request, d int, rng *rand.Rand, dst []int) []int {
	return v.candidates(nil, r, d, rng, dst)
}

// candidates is Candidates; j, when not nil, is the job whose energies
// will be computed next, and its record is loaded with the candidates'.
func (v *TEGView) candidates(j *Job, r *Request, d int, rng *rand.Rand, dst []int) []int {
	s := v.sim.state
	cold := v.Field.Cold
	if r.GPUs > 0 {
		cold = v.Field.ColdGPU
	}
	pool := v.sim.eligible(r)
	// draw is the k-th draw: even draws from the cold list, odd ones
	// uniform; ok is false when there is nothing to draw from.
	draw := func(k int) (c int, ok bool) {
		switch {
		case k%2 == 0 && len(cold) > 0:
			return int(cold[rng.IntN(len(cold))]), true
		case pool == nil:
			return rng.IntN(len(s.M)), true // every machine: skip the identity lookup
		case len(pool) > 0:
			return int(pool[rng.IntN(len(pool))]), true
		}
		return 0, false
	}
	// The draws are made in rounds: while n more machines are needed, the
	// next n draws happen whatever the checks find (each check admits at
	// most one), so they are drawn first, in the same order from the same
	// stream, and what the checks read of them is loaded in one pass. On a
	// large cluster each candidate misses the cache; independent loads
	// overlap where the checks' dependent branches would serialise them.
	start := len(dst)
	v.Draws = 0
	for k := 0; k < 2*d && len(dst)-start < d; {
		n := min(d-(len(dst)-start), 2*d-k)
		pre, ran := v.pre[:0], false
		for len(pre) < n {
			c, ok := draw(k + len(pre))
			if !ok {
				ran = true
				break
			}
			pre = append(pre, c)
		}
		v.pre = pre
		v.sim.touch(pre, j, r, v.Field)
		j = nil
		for _, c := range pre {
			k++
			v.Draws++
			if !s.Admit(c, r) || containsInt(dst[start:], c) {
				continue
			}
			dst = append(dst, c)
		}
		if ran {
			v.Draws++ // the draw that found nothing to draw from
			break
		}
	}
	return dst
}

// touch loads the cache lines a candidate check reads of each machine (its
// State record, both lines of its hot record, its field ρ, its rack's
// field and power and, for a GPU request, its GPU slots), and the record
// of job j if not nil, so that their misses overlap; the sum only keeps
// the loads from being optimised away.
func (s *Sim) touch(ms []int, j *Job, r *Request, f *Field) {
	var sum float64
	if j != nil {
		sum = float64(s.jobs[j.ID].state)
	}
	for _, c := range ms {
		h := &s.ld.hot[c]
		sum += float64(s.state.M[c].FreeCPU) + h.a + h.fc.val + float64(f.Rho[3*c])
	}
	for _, c := range ms {
		rk := s.ld.hot[c].rack
		sum += float64(f.Kappa[rk]+f.Pi[rk]) + s.ld.rackPower[rk]
	}
	if r.GPUs > 0 {
		for _, c := range ms {
			if gs := s.state.GPUs(c); len(gs) > 0 {
				sum += float64(gs[0])
			}
		}
	}
	s.touchSink = sum
}

// eligibleKey is what decides which machines could ever hold a request.
type eligibleKey struct {
	gpus   int
	models uint64
}

// eligible returns the machines whose GPU count and model could hold r
// (nil for CPU jobs: every machine), built once per shape: the uniform half of a
// placement's candidates comes from it, so GPU jobs do not waste their
// draws on CPU-only machines.
func (s *Sim) eligible(r *Request) []int32 {
	if r.GPUs == 0 {
		return nil // all machines
	}
	k := eligibleKey{r.GPUs, r.Models}
	if l, ok := s.eligibleCache[k]; ok {
		return l
	}
	l := []int32{} // non-nil even when empty: nil means every machine
	for i := range s.c.Machines {
		if s.c.Machines[i].GPUs >= r.GPUs && s.state.ModelOK(i, r) {
			l = append(l, int32(i))
		}
	}
	s.eligibleCache[k] = l
	return l
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// PlacementProbs writes into dst, resized, the distribution the langevin
// scheduler draws a placement from among candidates of energies e at
// temperature t: p_i ∝ exp(-(e_i - min e)/t), and at t <= 0 all of it on
// the first least energy, as its draw takes it. It is what an offline
// learner can expect langevin's logs to hold of each candidate. dst may
// be e itself.
func PlacementProbs(e []float64, t float64, dst []float64) []float64 {
	dst = dst[:0]
	if len(e) == 0 {
		return dst
	}
	best := 0
	for i := range e {
		if e[i] < e[best] {
			best = i
		}
	}
	eb, z := e[best], 0.0
	for i := range e {
		w := 0.0
		switch {
		case t > 0:
			w = math.Exp(-(e[i] - eb) / t)
		case i == best:
			w = 1
		}
		dst = append(dst, w)
		z += w
	}
	for i := range dst {
		dst[i] /= z
	}
	return dst
}

// boltzmann samples index i with probability ∝ exp(-e_i/T); at T = 0 it
// returns the lowest energy (first on ties).
func boltzmann(e []float64, t float64, rng *rand.Rand) int {
	best := 0
	for i := range e {
		if e[i] < e[best] {
			best = i
		}
	}
	if t <= 0 {
		return best
	}
	total := 0.0
	for i := range e {
		total += math.Exp(-(e[i] - e[best]) / t)
	}
	u := rng.Float64() * total
	for i := range e {
		u -= math.Exp(-(e[i] - e[best]) / t)
		if u < 0 {
			return i
		}
	}
	return len(e) - 1
}
