package env

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

func init() {
	RegisterAllocationPolicy("langevin", func() AllocationPolicy { return NewLangevinRoundDefault() })
}

// LangevinRoundParams are the parameters of the LangevinRound allocation
// policy. The energy of job i on GPU type j is
//
//	E_ij = Speed·(r_i + Prior)/ServiceScale·(1/s_ij - 1) + Pressure·p(ρ_j)
//	       + Service·ln(1 + A_i/ServiceScale) - Wait·w_i/WaitScale
//
// with s_ij job i's throughput on j over its throughput on its fastest
// type, r_i = A_i/scale_i the seconds it has run, A_i its attained service
// (GPU-seconds), p the TEG's M/M/1 pressure of ρ_j (the GPUs of the active
// gangs whose fastest type is j, over j's GPUs) and w_i the time the job
// has spent in the system not running. The first term is the time (in
// ServiceScale units) a job loses on j against its fastest type if its
// remaining work is what it has run plus Prior seconds: with heavy-tailed
// job sizes the jobs that ran longest are expected to have the most left.
// The default 10 h prior keeps the weight from varying much with run time
// (flatter weights measured slightly better, see the defaults).
type LangevinRoundParams struct {
	// Temperature is γ0: the order of the jobs is by energy plus Gaussian
	// noise of variance 2·T_eff, and a job takes a free type drawn with
	// probability ∝ exp(-E/T_eff), where T_eff = γ0/(1+D) (D the Landau
	// damping). 0 is the deterministic greedy descent.
	Temperature float64
	// Speed, Pressure, Service and Wait weigh the energy's terms (>= 0).
	Speed, Pressure, Service, Wait float64
	// ServiceScale (seconds: of GPU time in the service term, of run time
	// in the speed term) and WaitScale (seconds) set the units of the
	// terms (> 0); Prior (seconds, >= 0) is the run time the speed term
	// assumes of a job on top of its own.
	ServiceScale, WaitScale, Prior float64
	// Damping is the base energy gain a change of a running job must beat:
	// a job keeps its type unless a move lowers its energy by more than
	// the threshold Damping·(1+D) + DampingPerMove·M, where M is the number
	// of recent moves, evaporating with TokenHalfLife; likewise a queued job
	// preempts a running one only if its energy is lower by more than the
	// threshold.
	Damping, DampingPerMove float64
	// MaxMoves bounds the changes (moves and preemptions of running jobs)
	// of one allocation. Each change also spends one token from a balance
	// that earns TokenRate tokens per second and evaporates with
	// TokenHalfLife (0: no evaporation), so that the sustained rate of
	// changes is bounded too; the balance starts at MaxMoves.
	MaxMoves                 int
	TokenRate, TokenHalfLife float64
	// The Landau controller's parameters (TEGConfig's DMax, PhiC, Width,
	// KChi, Chi0, Beta and Window). Its order parameter φ is the GPUs the
	// active gangs ask for beyond the cluster's, over the cluster's GPUs,
	// observed once per allocation.
	DMax, PhiC, Width, KChi, Chi0, Beta float64
	Window                              int
}

// DefaultLangevinRoundParams are the defaults: the TEG's temperature and
// controller (DefaultTEG); time counted in hours, a unit speed weight with
// a 10 h prior and a 0.3 service weight (on Gavel's traces, seeds 0-1, a
// 1 h prior and unit service weight gave 0.1-0.3 h higher average JCTs at
// the highest rates, a 100 h prior 0.05-0.15 h lower); no pressure term
// (with the plain speed term -s_ij in place of the weighted slowdown, a
// weight of 0.01 raised the single-GPU average JCT at 4 jobs/h, seed 0,
// from 17.33 to 18.24 h: a job that yields a demanded type to others
// leaves it idle when they do not come; the exchanges do the matching); no
// waiting term (least attained service already lifts a starved job above
// the running ones, whose service grows); and at most 8 changes per
// allocation with tokens earned at 8 per Gavel allocation interval (1920 s)
// and an hour's half-life.
var DefaultLangevinRoundParams = LangevinRoundParams{
	Temperature:    DefaultTEG.Gamma0,
	Speed:          1,
	Pressure:       0,
	Service:        0.3,
	Wait:           0,
	ServiceScale:   3600,
	WaitScale:      3600,
	Prior:          36000,
	Damping:        0.1,
	DampingPerMove: 0.01,
	MaxMoves:       8,
	TokenRate:      8.0 / 1920,
	TokenHalfLife:  3600,
	DMax:           DefaultTEG.DMax,
	PhiC:           DefaultTEG.PhiC,
	Width:          DefaultTEG.Width,
	KChi:           DefaultTEG.KChi,
	Chi0:           DefaultTEG.Chi0,
	Beta:           DefaultTEG.Beta,
	Window:         DefaultTEG.Window,
}

// Validate reports the first parameter out of range.
func (p *LangevinRoundParams) Validate() error {
	fin := func(vs ...float64) bool {
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
		return true
	}
	switch {
	case !fin(p.Temperature, p.Speed, p.Pressure, p.Service, p.Wait, p.ServiceScale, p.WaitScale, p.Prior, p.Damping, p.DampingPerMove,
		p.TokenRate, p.TokenHalfLife, p.DMax, p.PhiC, p.Width, p.KChi, p.Chi0, p.Beta):
		return fmt.Errorf("langevin: parameter is NaN or infinite: %+v", *p)
	case p.Temperature < 0:
		return fmt.Errorf("langevin: temperature %v must be >= 0", p.Temperature)
	case p.Speed < 0 || p.Pressure < 0 || p.Service < 0 || p.Wait < 0:
		return fmt.Errorf("langevin: weights speed %v, pressure %v, service %v, wait %v must be >= 0", p.Speed, p.Pressure, p.Service, p.Wait)
	case p.ServiceScale <= 0 || p.WaitScale <= 0 || p.Prior < 0:
		return fmt.Errorf("langevin: service scale %v and wait scale %v must be > 0, prior %v >= 0", p.ServiceScale, p.WaitScale, p.Prior)
	case p.Damping < 0 || p.DampingPerMove < 0:
		return fmt.Errorf("langevin: damping %v and damping per move %v must be >= 0", p.Damping, p.DampingPerMove)
	case p.MaxMoves < 0 || p.TokenRate < 0 || p.TokenHalfLife < 0:
		return fmt.Errorf("langevin: max moves %d, token rate %v, token half-life %v must be >= 0", p.MaxMoves, p.TokenRate, p.TokenHalfLife)
	case p.DMax < 0 || p.PhiC < 0 || p.Width <= 0 || p.Chi0 < 0 || p.Beta <= 0 || p.Beta > 1 || p.Window < 2:
		return fmt.Errorf("langevin: controller parameters out of range: Dmax %v >= 0, phi_c %v >= 0, width %v > 0, chi0 %v >= 0, beta %v in (0, 1], window %d >= 2",
			p.DMax, p.PhiC, p.Width, p.Chi0, p.Beta, p.Window)
	}
	return nil
}

// LangevinRound is the Langevin governor of the TEG (docs/teg.md)
// generalised to gangs and GPU types, as a round-based allocation policy
// for Gavel's mechanism (Narayanan et al., "Heterogeneity-Aware Cluster
// Scheduling Policies for Deep Learning Workloads", OSDI 2020).
//
// Field: every (job, type) pair has the energy of LangevinRoundParams:
// heterogeneity enters as the job's slowdown on the type against its
// fastest, weighted by its expected remaining time; demand as the type's
// pressure (off by default); and time as least attained service, the
// priority of Tiresias (Gu et al., "Tiresias: A GPU Cluster Manager for
// Distributed Deep Learning", NSDI 2019), counted in GPU-seconds so that
// gangs age by their size.
//
// Dynamics: the jobs are visited in order of their least energy plus
// Gaussian noise at the effective temperature (the Langevin step, drawn
// from the policy's own generator, seeded by RoundConfig.Seed). A job that
// did not run takes whole GPUs (x = 1) of a free type that fits its gang,
// drawn by the Boltzmann rule of the machine-level governor (the lowest
// energy at temperature 0); with no free type it may preempt the
// lowest-priority running gangs of a type, if their energies exceed its own
// by more than the damping threshold. Then the placed jobs drift: a job
// with a type of lower energy trades places with the job there whose
// trade lowers the pair's energy most, if by more than the threshold (a
// 2-exchange step toward the matching of jobs to types that minimises
// the total energy, which the order alone misses when a job that gains
// little took a fast type first), and GPUs left free go to waiting jobs.
//
// Damping: a running job keeps its GPUs (a lease, as Gavel's mechanism
// gives) unless a free type lowers its energy by more than the threshold,
// which rises with the Landau controller's damping D (queued demand past
// the critical point) and with the recent moves, so that the allocation
// does not churn: every change costs a checkpoint-restore in a real
// cluster.
//
// Tokens: every change of a running job (a move, an exchange or a
// preemption) spends a token; at most MaxMoves are spent per allocation, from a balance that
// earns at TokenRate and evaporates, so its supply is bounded.
//
// Safety: the allocation is checked before it is returned, as a barrier
// that never yields: whole gangs only (x in {0, 1}, at most one type per
// job, only where the job can run) and at most each type's GPUs in use; a
// violation is an error, not a repaired allocation.
//
// It runs the TEG's own kernels: the Landau controller (controller), the
// closed-form evaporation of token balances (tokens.decay), the Boltzmann
// draw (boltzmann) and the M/M/1 pressure (pressure).
//
// The policy keeps the last allocation (which job runs on which type) and
// assumes the mechanism runs it: it sets SkipUnallocated, so every
// allocated gang runs every round on its type.
type LangevinRound struct {
	P   LangevinRoundParams
	rng *rand.Rand

	ctl     controller
	teg     TEGConfig // the controller's parameters
	tok     tokens    // bal[0]: move tokens; bal[1]: recent moves (earns nothing)
	started bool
	last    float64 // time of the last allocation
	moves   int     // changes made over the run

	// The last allocation: IDs ascending, with their types.
	prevID, prevType []int

	// Per-allocation buffers.
	e              []float64 // E_ij
	key            []float64 // order key per job
	order, pos     []int
	prev, cur      []int // per job: type last time and now (-1: none)
	free, want     []int // per type
	rho            []float64
	vict           [][]int // per type: running jobs on it, in order
	vtop           []int   // per type: victims still held, a prefix of vict
	hold           [][]int // per type: the jobs placed on it
	fitE           []float64
	fitT           []int
	nextID, nextTy []int
}

// NewLangevinRound returns the policy with parameters p, or the error of
// p.Validate.
func NewLangevinRound(p LangevinRoundParams) (*LangevinRound, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &LangevinRound{P: p}, nil
}

// NewLangevinRoundDefault returns the policy with the default parameters.
func NewLangevinRoundDefault() *LangevinRound {
	return &LangevinRound{P: DefaultLangevinRoundParams}
}

// Name implements AllocationPolicy.
func (*LangevinRound) Name() string { return "langevin" }

// Seed implements SeededPolicy.
func (p *LangevinRound) Seed(seed uint64) {
	p.rng = rand.New(rand.NewPCG(seed, 0x6c616e676576696e)) // "langevin"
}

// RoundHints implements RoundHintsPolicy: the allocation is whole gangs,
// and a job runs only where it was allocated.
func (*LangevinRound) RoundHints() RoundHints { return RoundHints{SkipUnallocated: true} }

// Moves is the number of changes of running jobs (moves to another type
// and preemptions) the policy has made.
func (p *LangevinRound) Moves() int { return p.moves }

// params maps the parameter names SetParam takes to the fields.
func (p *LangevinRoundParams) params() map[string]*float64 {
	return map[string]*float64{
		"temperature": &p.Temperature, "speed": &p.Speed, "pressure": &p.Pressure, "service": &p.Service, "wait": &p.Wait,
		"service-scale": &p.ServiceScale, "wait-scale": &p.WaitScale, "prior": &p.Prior,
		"damping": &p.Damping, "damping-per-move": &p.DampingPerMove, "token-rate": &p.TokenRate, "token-half-life": &p.TokenHalfLife,
		"d-max": &p.DMax, "phi-c": &p.PhiC, "width": &p.Width, "k-chi": &p.KChi, "chi0": &p.Chi0, "beta": &p.Beta,
	}
}

// SetParam implements TunablePolicy: it sets a parameter by name (the
// field's name in lower case, words joined by '-'; "max-moves" and
// "window" take integers) before the first allocation, and rejects a value
// that fails Validate, leaving the parameters as they were.
func (p *LangevinRound) SetParam(name string, v float64) error {
	if p.started {
		return fmt.Errorf("langevin: parameter %s set after the first allocation", name)
	}
	q := p.P
	switch f, ok := q.params()[name]; {
	case ok:
		*f = v
	case name == "max-moves" || name == "window":
		if v != math.Trunc(v) || math.Abs(v) > 1<<30 {
			return fmt.Errorf("langevin: %s %v must be an integer", name, v)
		}
		if name == "max-moves" {
			q.MaxMoves = int(v)
		} else {
			q.Window = int(v)
		}
	default:
		names := []string{"max-moves", "window"}
		for k := range q.params() {
			names = append(names, k)
		}
		slices.Sort(names)
		return fmt.Errorf("langevin: unknown parameter %q (known: %s)", name, strings.Join(names, ", "))
	}
	if err := q.Validate(); err != nil {
		return err
	}
	p.P = q
	return nil
}

// start validates the parameters and sets up the controller and tokens at
// the first allocation.
func (p *LangevinRound) start(now float64) error {
	if err := p.P.Validate(); err != nil {
		return err
	}
	if p.rng == nil {
		p.Seed(0)
	}
	p.teg = DefaultTEG
	p.teg.DMax, p.teg.PhiC, p.teg.Width, p.teg.KChi, p.teg.Chi0, p.teg.Beta, p.teg.Window =
		p.P.DMax, p.P.PhiC, p.P.Width, p.P.KChi, p.P.Chi0, p.P.Beta, p.P.Window
	p.ctl = controller{}
	p.ctl.init(&p.teg)
	p.tok = tokens{bal: []float64{float64(p.P.MaxMoves), 0}, rate: []float64{p.P.TokenRate, 0}}
	if p.P.TokenHalfLife > 0 {
		p.tok.lambda = math.Ln2 / p.P.TokenHalfLife
	}
	p.last, p.started = now, true
	return nil
}

// Allocate implements AllocationPolicy.
func (p *LangevinRound) Allocate(s *RoundState, x []float64) error {
	if !p.started {
		if err := p.start(s.Time); err != nil {
			return err
		}
	}
	n, nt := len(s.Jobs), len(s.Types)
	if len(x) != n*nt || len(s.Throughput) != n*nt || len(s.Capacity) != nt {
		return fmt.Errorf("langevin: %d jobs and %d types need %d allocation and throughput entries and %d capacities, got %d, %d and %d",
			n, nt, n*nt, nt, len(x), len(s.Throughput), len(s.Capacity))
	}
	clear(x)

	// Tokens earn and evaporate, the recent moves evaporate.
	p.tok.decay(max(0, s.Time-p.last))
	p.last = s.Time

	// The order parameter: asked-for GPUs beyond the cluster's.
	total, demand := 0, 0
	for _, c := range s.Capacity {
		total += c
	}
	for i := range s.Jobs {
		demand += s.Jobs[i].Scale
	}
	phi := 0.0
	if total > 0 {
		phi = max(0, float64(demand-total)) / float64(total)
	}
	p.ctl.update(phi)
	d := p.ctl.d
	temp := p.P.Temperature / (1 + d)
	thresh := p.P.Damping*(1+d) + p.P.DampingPerMove*p.tok.bal[1]
	budget := min(p.P.MaxMoves, int(math.Floor(p.tok.bal[0])))

	p.grow(n, nt)

	// Previous types, by merging the last allocation's IDs with the jobs'.
	k := 0
	for i := range s.Jobs {
		id := s.Jobs[i].ID
		if i > 0 && id <= s.Jobs[i-1].ID {
			return fmt.Errorf("langevin: jobs not in ID order (%d after %d)", id, s.Jobs[i-1].ID)
		}
		for k < len(p.prevID) && p.prevID[k] < id {
			k++
		}
		p.prev[i], p.cur[i] = -1, -1
		if k < len(p.prevID) && p.prevID[k] == id {
			p.prev[i] = p.prevType[k]
		}
	}

	// Pressure: the GPUs wanted of each type by the gangs that run fastest
	// on it.
	clear(p.want)
	for i := range s.Jobs {
		if b := bestType(s.Throughput[i*nt : (i+1)*nt]); b >= 0 {
			p.want[b] += s.Jobs[i].Scale
		}
	}
	for j := range nt {
		p.rho[j] = 0
		if s.Capacity[j] > 0 {
			p.rho[j] = p.P.Pressure * pressure(float64(p.want[j])/float64(s.Capacity[j]))
		}
	}

	// Energies and the noisy order keys.
	sigma := math.Sqrt(2 * temp)
	for i := range s.Jobs {
		jb := &s.Jobs[i]
		row := s.Throughput[i*nt : (i+1)*nt]
		b := bestType(row)
		ran := max(0, jb.Attained) / float64(max(1, jb.Scale))
		u := p.P.Service * math.Log1p(max(0, jb.Attained)/p.P.ServiceScale)
		if p.P.Wait > 0 {
			u -= p.P.Wait * max(0, s.Time-jb.Arrival-ran) / p.P.WaitScale
		}
		w := p.P.Speed * (ran + p.P.Prior) / p.P.ServiceScale
		minE := math.Inf(1)
		for j := range nt {
			e := math.Inf(1)
			if b >= 0 && row[j] > 0 && jb.Scale <= s.Capacity[j] {
				e = w*(row[b]/row[j]-1) + p.rho[j] + u
			}
			p.e[i*nt+j] = e
			minE = min(minE, e)
		}
		if sigma > 0 && !math.IsInf(minE, 1) {
			minE += sigma * p.rng.NormFloat64()
		}
		p.key[i] = minE
		p.order[i] = i
	}
	slices.SortStableFunc(p.order, p.cmpKey)
	for r, i := range p.order {
		p.pos[i] = r
	}

	// Running jobs hold their GPUs until visited; each type's holders are
	// listed in order, so the lowest-priority ones are at the end.
	copy(p.free, s.Capacity)
	for j := range nt {
		p.vict[j] = p.vict[j][:0]
	}
	for _, i := range p.order {
		c := p.prev[i]
		if c < 0 {
			continue
		}
		if c >= nt || math.IsInf(p.e[i*nt+c], 1) || p.free[c] < s.Jobs[i].Scale {
			p.prev[i] = -1 // cannot stay: a new job
			continue
		}
		p.free[c] -= s.Jobs[i].Scale
		p.vict[c] = append(p.vict[c], i)
	}
	for j := range nt {
		p.vtop[j] = len(p.vict[j])
	}

	used := 0
	for r, i := range p.order {
		if math.IsInf(p.key[i], 1) {
			break // no job from here on can run anywhere
		}
		sc := s.Jobs[i].Scale
		if c := p.prev[i]; c >= 0 && p.cur[i] == -1 && !p.preempted(i, c) {
			// Running: stay, or move to a free type worth the threshold.
			p.cur[i] = c
			if used < budget {
				best := -1
				for j := range nt {
					if j != c && p.free[j] >= sc && p.e[i*nt+j] < p.e[i*nt+c]-thresh && (best < 0 || p.e[i*nt+j] < p.e[i*nt+best]) {
						best = j
					}
				}
				if best >= 0 {
					p.free[c] += sc
					p.free[best] -= sc
					p.cur[i] = best
					used++
				}
			}
			continue
		}
		// Not running: a free type, drawn by the Boltzmann rule.
		if p.place(i, sc, nt, temp) {
			continue
		}
		if used >= budget {
			continue
		}
		// Preempt: the type of least energy whose lowest-priority holders,
		// each above the threshold, free enough GPUs within the budget.
		bestJ, bestN := -1, 0
		for j := range nt {
			if math.IsInf(p.e[i*nt+j], 1) || (bestJ >= 0 && p.e[i*nt+j] >= p.e[i*nt+bestJ]) {
				continue
			}
			freed, m := p.free[j], 0
			for q := p.vtop[j] - 1; q >= 0 && freed < sc && used+m < budget; q-- {
				v := p.vict[j][q]
				if p.pos[v] <= r || p.key[v]-p.key[i] <= thresh {
					break
				}
				freed += s.Jobs[v].Scale
				m++
			}
			if freed >= sc {
				bestJ, bestN = j, m
			}
		}
		if bestJ < 0 {
			continue
		}
		for range bestN {
			p.vtop[bestJ]--
			v := p.vict[bestJ][p.vtop[bestJ]]
			p.free[bestJ] += s.Jobs[v].Scale
		}
		used += bestN
		p.free[bestJ] -= sc
		p.cur[i] = bestJ
	}

	p.fill(s, nt, temp)
	used = p.exchange(s, nt, thresh, used, budget)
	p.fill(s, nt, temp)

	// The last allocation, for the next call, and x.
	p.nextID, p.nextTy = p.nextID[:0], p.nextTy[:0]
	for i := range s.Jobs {
		if c := p.cur[i]; c >= 0 {
			x[i*nt+c] = 1
			p.nextID, p.nextTy = append(p.nextID, s.Jobs[i].ID), append(p.nextTy, c)
		}
	}
	p.prevID, p.nextID = p.nextID, p.prevID
	p.prevType, p.nextTy = p.nextTy, p.prevType

	p.tok.bal[0] = max(0, p.tok.bal[0]-float64(used))
	p.tok.bal[1] += float64(used)
	p.moves += used
	return checkGangAllocation(s, x)
}

// fill gives the GPUs freed after a job was visited (by a move, an
// exchange, or a preemption that freed more than it needed) to the waiting
// jobs, in order.
func (p *LangevinRound) fill(s *RoundState, nt int, temp float64) {
	for _, i := range p.order {
		if math.IsInf(p.key[i], 1) {
			break
		}
		if p.cur[i] < 0 {
			p.place(i, s.Jobs[i].Scale, nt, temp)
		}
	}
}

// exchange is the drift of the placed jobs between types: each job k, in
// order, that has a type a lowering its energy by more than thresh trades
// places with the job i on a for which the pair's energy falls most, if it
// falls by more than thresh, the free GPUs absorb a difference of gang
// sizes, and the tokens of the running jobs it changes (a job on the type
// it ran on last time costs one) are within budget. It returns the tokens
// used.
func (p *LangevinRound) exchange(s *RoundState, nt int, thresh float64, used, budget int) int {
	for j := range nt {
		p.hold[j] = p.hold[j][:0]
	}
	for _, i := range p.order {
		if c := p.cur[i]; c >= 0 {
			p.hold[c] = append(p.hold[c], i)
		}
	}
	cost := func(i, t int) int {
		if p.prev[i] == t {
			return 1
		}
		return 0
	}
	for _, k := range p.order {
		b := p.cur[k]
		if b < 0 {
			continue
		}
		eb, sk := p.e[k*nt+b], s.Jobs[k].Scale
		bestA, bestQ, bestG := -1, -1, thresh
		for a := range nt {
			ea := p.e[k*nt+a]
			if a == b || !(ea < eb-thresh) {
				continue
			}
			for q, i := range p.hold[a] {
				si := s.Jobs[i].Scale
				if p.free[a] < sk-si || p.free[b] < si-sk || used+cost(i, a)+cost(k, b) > budget {
					continue
				}
				if g := eb - ea + p.e[i*nt+a] - p.e[i*nt+b]; g > bestG {
					bestA, bestQ, bestG = a, q, g
				}
			}
		}
		if bestA < 0 {
			continue
		}
		a := bestA
		i := p.hold[a][bestQ]
		used += cost(i, a) + cost(k, b)
		si := s.Jobs[i].Scale
		p.free[a] += si - sk
		p.free[b] += sk - si
		p.cur[i], p.cur[k] = b, a
		p.hold[a][bestQ] = k
		for q, v := range p.hold[b] {
			if v == k {
				p.hold[b][q] = i
				break
			}
		}
	}
	return used
}

// place gives job i, of sc GPUs, a free type drawn with probability
// ∝ exp(-E/temp) among those that fit, and reports whether one did.
func (p *LangevinRound) place(i, sc, nt int, temp float64) bool {
	p.fitE, p.fitT = p.fitE[:0], p.fitT[:0]
	for j := range nt {
		if p.free[j] >= sc && !math.IsInf(p.e[i*nt+j], 1) {
			p.fitE, p.fitT = append(p.fitE, p.e[i*nt+j]), append(p.fitT, j)
		}
	}
	if len(p.fitT) == 0 {
		return false
	}
	j := p.fitT[boltzmann(p.fitE, temp, p.rng)]
	p.free[j] -= sc
	p.cur[i] = j
	return true
}

// preempted reports whether running job i was preempted from type c this
// allocation: it is no longer among c's holders.
func (p *LangevinRound) preempted(i, c int) bool {
	for q := p.vtop[c]; q < len(p.vict[c]); q++ {
		if p.vict[c][q] == i {
			return true
		}
	}
	return false
}

// cmpKey orders jobs by key, then by index (the sort is stable).
func (p *LangevinRound) cmpKey(a, b int) int { return cmpFloat(p.key[a], p.key[b]) }

// grow sizes the per-allocation buffers for n jobs and nt types.
func (p *LangevinRound) grow(n, nt int) {
	p.e = slices.Grow(p.e[:0], n*nt)[:n*nt]
	p.key = slices.Grow(p.key[:0], n)[:n]
	p.order = slices.Grow(p.order[:0], n)[:n]
	p.pos = slices.Grow(p.pos[:0], n)[:n]
	p.prev = slices.Grow(p.prev[:0], n)[:n]
	p.cur = slices.Grow(p.cur[:0], n)[:n]
	p.free = slices.Grow(p.free[:0], nt)[:nt]
	p.want = slices.Grow(p.want[:0], nt)[:nt]
	p.rho = slices.Grow(p.rho[:0], nt)[:nt]
	p.vtop = slices.Grow(p.vtop[:0], nt)[:nt]
	for len(p.vict) < nt {
		p.vict = append(p.vict, nil)
		p.hold = append(p.hold, nil)
	}
}

// bestType is the index of the largest positive throughput (first on
// ties), -1 if none is positive.
func bestType(row []float64) int {
	b := -1
	for j, v := range row {
		if v > 0 && (b < 0 || v > row[b]) {
			b = j
		}
	}
	return b
}

// errGangAllocation marks an allocation that breaks the gang or capacity
// barrier.
var errGangAllocation = errors.New("unsafe allocation")

// checkGangAllocation is the hard safety check of a whole-gang allocation:
// every entry 0 or 1, at most one type per job and only where the job can
// run, and at most Capacity[j] GPUs of each type j in use.
func checkGangAllocation(s *RoundState, x []float64) error {
	nt := len(s.Types)
	for j := range nt {
		use := 0
		for i := range s.Jobs {
			switch v := x[i*nt+j]; v {
			case 0:
			case 1:
				if s.Throughput[i*nt+j] <= 0 {
					return fmt.Errorf("%w: job %d on type %s where it cannot run", errGangAllocation, s.Jobs[i].ID, s.Types[j])
				}
				use += s.Jobs[i].Scale
			default:
				return fmt.Errorf("%w: job %d has %v of type %s, not a whole gang", errGangAllocation, s.Jobs[i].ID, v, s.Types[j])
			}
		}
		if use > s.Capacity[j] {
			return fmt.Errorf("%w: %d GPUs of type %s in use, capacity %d", errGangAllocation, use, s.Types[j], s.Capacity[j])
		}
	}
	for i := range s.Jobs {
		on := 0
		for j := range nt {
			if x[i*nt+j] == 1 {
				on++
			}
		}
		if on > 1 {
			return fmt.Errorf("%w: job %d on %d types", errGangAllocation, s.Jobs[i].ID, on)
		}
	}
	return nil
}
