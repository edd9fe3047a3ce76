package env

import "math"

// Field is one snapshot of the holographic potential: V per machine and the
// machines with the lowest V. Agents read a snapshot that is Staleness
// ticks old (the gossip delay), which is what makes them herd.
type Field struct {
	V    []float32 // potential per machine; +Inf for machines that are down
	Cold []int32   // the coldest machines that are up, coldest first
	// ColdGPU is the same list among machines with GPUs, so that GPU jobs
	// get cold candidates they can use.
	ColdGPU []int32
	// coldBits has bit i set when machine i is in Cold or ColdGPU, so
	// that a sparse observation flags its candidates in O(1) each.
	coldBits []uint64
	Tick     int // tick it was computed at
	// The pressures' arguments, so that an agent can evaluate the potential
	// a machine would have with its own load added (the drift of a job is
	// the change of V its move causes, not the raw difference of V).
	Rho   []float32 // 3 per machine: CPU, memory, GPU utilisation
	Kappa []float32 // per rack: network congestion
	Pi    []float32 // per rack: power over budget
}

// unreachable is the potential of a machine that is down.
var unreachable = float32(math.Inf(1))

// fieldRing holds the snapshots in flight: computed but not yet visible,
// and the one agents currently see.
type fieldRing struct {
	bufs    []*Field // FIFO: bufs[0] is visible, later ones are pending
	spare   []*Field
	latest  *Field // newest snapshot, for measurements that want truth
	coldTmp []int32
}

// newField allocates a snapshot for n machines and r racks.
func newField(n, r, cold int) *Field {
	return &Field{V: make([]float32, n), Cold: make([]int32, 0, cold), ColdGPU: make([]int32, 0, cold), Rho: hugeSlice[float32](3 * n),
		Kappa: make([]float32, r), Pi: make([]float32, r), coldBits: make([]uint64, (n+63)/64)}
}

// isCold reports whether machine i is in the snapshot's Cold or ColdGPU
// list.
func (f *Field) isCold(i int) bool { return f.coldBits[i>>6]>>(i&63)&1 != 0 }

// setColdBits sets (on) or clears the bits of the cold lists' machines.
func (f *Field) setColdBits(on bool) {
	for _, l := range [2][]int32{f.Cold, f.ColdGPU} {
		for _, i := range l {
			if on {
				f.coldBits[i>>6] |= 1 << (i & 63)
			} else {
				f.coldBits[i>>6] &^= 1 << (i & 63)
			}
		}
	}
}

// potentialWith is the potential machine i would have (on snapshot f) with
// extra CPU, memory and GPU utilisation and extra rack congestion and power
// fractions added: the energy an agent compares when it considers moving.
func potentialWith(w *FieldWeights, f *Field, i, rack int, dc, dm, dg, dk, dp float64) float64 {
	// A machine that is down carries +Inf in its CPU ρ as in V: reading it
	// here, beside the other ρ, saves a cache line per candidate.
	rho := f.Rho[3*i : 3*i+3]
	if math.IsInf(float64(rho[0]), 1) {
		return math.Inf(1)
	}
	return w.CPU*pressure(float64(rho[0])+dc) + w.Mem*pressure(float64(rho[1])+dm) + w.GPU*pressure(float64(rho[2])+dg) +
		w.Net*pressure(float64(f.Kappa[rack])+dk) + w.Pow*pressure(float64(f.Pi[rack])+dp)
}

// computeField fills f with the potential of the current state:
// V_i = w_cpu·p(ρcpu) + w_mem·p(ρmem) + w_gpu·p(ρgpu) + w_net·p(κ_rack) +
// w_pow·p(π_rack), and selects the coldest machines.
func (s *Sim) computeField(f *Field) {
	w := s.teg.Weights
	st := s.state
	c := s.c
	// Rack terms once per rack.
	for r := range c.Racks {
		rk := &c.Racks[r]
		kappa, pi := 0.0, 0.0
		if rk.UplinkGbps > 0 {
			kappa = s.ld.rackTraffic[r] / rk.UplinkGbps
		}
		if rk.PowerBudgetW > 0 {
			pi = s.ld.rackPower[r] / rk.PowerBudgetW
		}
		f.Kappa[r], f.Pi[r] = float32(kappa), float32(pi)
		s.ld.rackV[r] = w.Net*pressure(kappa) + w.Pow*pressure(pi)
	}
	for i := range c.Machines {
		m := &c.Machines[i]
		rc := s.ld.cpuUse[i] / float64(m.CPU)
		rm := s.memUsage(i) / float64(m.Mem)
		rg := 0.0
		if m.GPUs > 0 {
			rg = 1 - float64(st.M[i].IdleGPU)/float64(m.GPUs*MilliGPU)
		}
		f.Rho[3*i], f.Rho[3*i+1], f.Rho[3*i+2] = float32(rc), float32(rm), float32(rg)
		if !st.M[i].Up {
			f.V[i], f.Rho[3*i] = unreachable, unreachable
			continue
		}
		f.V[i] = float32(w.CPU*pressure(rc) + w.Mem*pressure(rm) + w.GPU*pressure(rg) + s.ld.rackV[m.Rack])
	}
	f.Tick = s.ticks
	f.setColdBits(false) // a recycled snapshot: the previous lists' bits go
	f.Cold = s.selectCold(f, f.Cold, false)
	f.ColdGPU = s.selectCold(f, f.ColdGPU, true)
	f.setColdBits(true)
}

// selectCold returns in out the ColdList machines of lowest V (ties by
// index), only machines with GPUs when gpu is set, with a bounded max-heap:
// O(n log k), no allocation.
func (s *Sim) selectCold(f *Field, out []int32, gpu bool) []int32 {
	k := s.teg.ColdList
	h := s.fields.coldTmp[:0]
	worse := func(a, b int32) bool { // a is hotter than b
		if f.V[a] != f.V[b] {
			return f.V[a] > f.V[b]
		}
		return a > b
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && worse(h[r], h[l]) {
				m = r
			}
			if !worse(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := range f.V {
		if f.V[i] == unreachable || (gpu && s.c.Machines[i].GPUs == 0) {
			continue
		}
		if len(h) < k {
			h = append(h, int32(i))
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if !worse(h[j], h[p]) {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			continue
		}
		if worse(h[0], int32(i)) {
			h[0] = int32(i)
			down(0)
		}
	}
	// Heap-sort into coldest-first order.
	out = out[:len(h)]
	for n := len(h); n > 0; n-- {
		out[n-1] = h[0]
		h[0] = h[n-1]
		h = h[:n-1]
		down(0)
	}
	s.fields.coldTmp = h[:0]
	return out
}

// refreshField computes a new snapshot when due and publishes snapshots
// whose staleness has elapsed.
func (s *Sim) refreshField() {
	fr := &s.fields
	if s.ticks%s.teg.FieldEvery == 0 || fr.latest == nil {
		var f *Field
		if n := len(fr.spare); n > 0 {
			f, fr.spare = fr.spare[n-1], fr.spare[:n-1]
		} else {
			f = newField(len(s.c.Machines), len(s.c.Racks), s.teg.ColdList)
		}
		s.computeField(f)
		fr.bufs = append(fr.bufs, f)
		fr.latest = f
	}
	// Publish: drop the visible snapshot once a newer one is old enough.
	for len(fr.bufs) > 1 && fr.bufs[1].Tick+s.teg.Staleness <= s.ticks {
		fr.spare = append(fr.spare, fr.bufs[0])
		copy(fr.bufs, fr.bufs[1:])
		fr.bufs = fr.bufs[:len(fr.bufs)-1]
	}
}

// visibleField is the snapshot agents act on.
func (s *Sim) visibleField() *Field { return s.fields.bufs[0] }
