package env

import "math"

// The usage model: how much of its request a running job really uses. It is
// part of the simulated world, not of any policy, and it is drawn from a
// counter-based hash of (seed, job, start number), so every scheduler sees
// the same job behave the same way, whatever the order of events.

// memStartMax bounds a job's memory use at start as a fraction of its
// request; the safety layer relies on it (and on TEGConfig.GrowthMax).
const memStartMax = 0.6

// usage is one run segment's usage of a job.
type usage struct {
	cpu  float64 // CPU used, fraction of the request
	f0   float64 // memory used at t0, fraction of the request
	g    float64 // memory growth per second, fraction of the request
	ceil float64 // plateau of memory use, fraction of the request
	t0   float64 // segment start
	tsat float64 // when memory use reaches the plateau
}

// frac is the memory fraction used at time t.
func (u *usage) frac(t float64) float64 {
	if t >= u.tsat {
		return u.ceil
	}
	return u.f0 + u.g*(t-u.t0)
}

// SplitMix64 is one step of Steele, Lea and Flood's SplitMix64 generator
// ("Fast splittable pseudorandom number generators", OOPSLA 2014): a fast,
// well-mixed 64-bit hash of x.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hashStream yields uniform floats in [0, 1) from a hashed counter.
type hashStream struct{ x uint64 }

func (h *hashStream) float() float64 {
	h.x = SplitMix64(h.x)
	return float64(h.x>>11) / (1 << 53)
}

func (h *hashStream) uniform(lo, hi float64) float64 { return lo + (hi-lo)*h.float() }

// drawUsage draws the usage of job j's start number run beginning at t.
func drawUsage(seed uint64, j *Job, run uint32, t float64, cfg *TEGConfig) usage {
	h := hashStream{x: seed ^ SplitMix64(uint64(j.ID)<<20^uint64(run))}
	var u usage
	switch {
	case j.Kind == Training:
		u.cpu = h.uniform(0.85, 1.0)
	case j.Kind == Service:
		u.cpu = h.uniform(0.3, 0.8)
	case j.QoS == BestEffort || j.QoS == Burstable:
		u.cpu = h.uniform(0.5, 1.25) // may burst above the request
	default:
		u.cpu = h.uniform(0.5, 1.0)
	}
	u.f0 = h.uniform(0.3, memStartMax)
	if h.float() < cfg.OveruseShare {
		u.ceil = h.uniform(1, 1+cfg.MemOveruse)
	} else {
		u.ceil = h.uniform(u.f0, 1)
	}
	u.g = h.uniform(0.2, 1) * cfg.GrowthMax
	u.t0 = t
	u.tsat = math.Inf(1)
	if u.g > 0 {
		u.tsat = t + (u.ceil-u.f0)/u.g
	}
	return u
}

// loads are the usage aggregates per machine and rack, kept incrementally so
// that reading a machine's memory use at any time is O(1): use(t) =
// a + b·t + sat, where growing jobs contribute the line
// req·(f0 + g·(t - t0)) and saturated ones their plateau. What a candidate
// check reads per machine is packed into one record (mem, ms), so that a
// check at 100k machines costs a cache line, not one per array.
type loads struct {
	cpuUse       []float64 // millicores in use
	hot          []machHot
	rackTraffic  []float64 // Gbit/s through each rack's uplink
	rackPower    []float64 // W per rack, down machines counted at idle
	power        []float64 // W per machine (0 when down)
	barrierPower []float64 // W per machine as the rack barrier counts it
	rackV        []float64 // scratch: rack terms of the field
	alarmVer     []uint32  // version of each machine's memory alarm
}

// machHot is everything a candidate check reads per machine besides the
// State record: two cache lines, where separate arrays cost one line each.
type machHot struct {
	memAgg
	machStatic
	fc fragCache // F_n(M) cached by machine version
	_  [8]byte   // pad to 128 bytes: two whole cache lines
}

// memAgg is a machine's memory-use aggregate.
type memAgg struct {
	a, b float64 // growing jobs: Σ req·(f0 - g·t0) and Σ req·g
	sat  float64 // saturated jobs: Σ req·ceil
	grow float64 // Σ request of jobs still growing (the barrier's bound)
}

// machStatic is what the hot paths need of a machine's static description.
type machStatic struct {
	cpu, mem    float64 // capacities
	wattsPerCPU float64 // dynamic power per millicore in use
	wattsPerGPU float64 // dynamic power per milli-GPU allocated
	budget      float64 // its rack's power budget, W
	uplink      float64 // its rack's uplink, Gbit/s
	groups      uint64  // NVLink group of each GPU, 4 bits each (packGroups)
	peakW       float64 // power draw at full utilisation (Machine.PeakW)
	rack        int32
	gpus        int32
}

func newLoads(c *Cluster) loads {
	n, r := len(c.Machines), len(c.Racks)
	l := loads{
		cpuUse: make([]float64, n), hot: hugeSlice[machHot](n), alarmVer: make([]uint32, n),
		rackTraffic: make([]float64, r), rackPower: make([]float64, r), rackV: make([]float64, r),
		power: make([]float64, n), barrierPower: make([]float64, n),
	}
	for i := range c.Machines {
		m := &c.Machines[i]
		rk := &c.Racks[m.Rack]
		perCPU, perGPU := dynCoefficients(m)
		l.hot[i].machStatic = machStatic{cpu: float64(m.CPU), mem: float64(m.Mem), wattsPerCPU: perCPU, wattsPerGPU: perGPU,
			budget: rk.PowerBudgetW, uplink: rk.UplinkGbps, groups: packGroups(m), peakW: m.PeakW, rack: int32(m.Rack), gpus: int32(m.GPUs)}
	}
	return l
}

// memUsage is machine i's memory in use now, MiB.
func (s *Sim) memUsage(i int) float64 {
	m := &s.ld.hot[i].memAgg
	return max(0, m.a+m.b*s.now+m.sat)
}

// addUsage adds (sign +1) or removes (sign -1) job id's usage on machine i.
func (s *Sim) addUsage(id, i int, sign float64) {
	r := &s.jobs[id]
	j := &s.w.Jobs[id]
	req := float64(j.Mem)
	m := &s.ld.hot[i].memAgg
	s.ld.cpuUse[i] += sign * r.use.cpu * float64(j.CPU)
	if r.saturated {
		m.sat += sign * req * r.use.ceil
	} else {
		m.a += sign * req * (r.use.f0 - r.use.g*r.use.t0)
		m.b += sign * req * r.use.g
		m.grow += sign * req
	}
	s.ld.rackTraffic[s.c.Machines[i].Rack] += sign * j.NetGbps
	if sign < 0 && len(s.onMach[i]) == 0 {
		// Keep sums exactly zero on an empty machine: float residue would
		// otherwise creep into the field. (Callers remove the job from
		// onMach before its usage.)
		s.ld.cpuUse[i], *m = 0, memAgg{}
	}
}

// saturate moves a job from the growing to the plateau part of its
// machine's aggregates.
func (s *Sim) saturate(id int) {
	r := &s.jobs[id]
	i := r.alloc.Machine
	s.addUsage(id, i, -1)
	r.saturated = true
	s.addUsage(id, i, +1)
}
