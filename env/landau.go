package env

import "math"

// controller is the Landau damping controller of docs/teg.md §5. It
// watches the order parameter φ (queued work over capacity) for the early
// warnings of a continuous phase transition, a rising mean and a growing
// susceptibility χ = Var(φ)/mean(φ), and raises the damping D before the
// queue runs away:
//
//	D* = D_max · sigmoid((φ̄ - φ_c)/w + k_χ·(χ - χ_0)),  D ← D + β(D* - D).
type controller struct {
	cfg        *TEGConfig
	d          float64 // current damping D
	ring       []float64
	head, n    int
	sum, sumSq float64
	lagSum     float64 // Σ φ_t·φ_{t-1} over the window
	last       float64
	// queued work, maintained by the simulation
	queuedCPU, queuedGPU float64
	overridden           bool
}

func (c *controller) init(cfg *TEGConfig) {
	c.cfg = cfg
	c.ring = make([]float64, cfg.Window)
}

// phi is the order parameter now: the larger of queued CPU and queued GPU
// demand as a fraction of the capacity that is up.
func (s *Sim) phi() float64 {
	st := s.state
	p := 0.0
	if st.CapCPU > 0 {
		p = s.ctl.queuedCPU / float64(st.CapCPU)
	}
	if st.CapGPU > 0 {
		p = max(p, s.ctl.queuedGPU/float64(st.CapGPU))
	}
	return max(0, p)
}

// observe adds one sample of φ to the rolling window.
func (c *controller) observe(phi float64) {
	if c.n == len(c.ring) {
		old := c.ring[c.head]
		next := c.ring[(c.head+1)%len(c.ring)]
		c.sum -= old
		c.sumSq -= old * old
		c.lagSum -= old * next
	}
	if c.n > 0 {
		c.lagSum += c.last * phi
	}
	c.ring[c.head] = phi
	c.head = (c.head + 1) % len(c.ring)
	if c.n < len(c.ring) {
		c.n++
	}
	c.sum += phi
	c.sumSq += phi * phi
	c.last = phi
}

// Stats are the controller's rolling statistics.
type Stats struct {
	Phi, Mean, Var, Chi, Lag1, Target float64
}

func (c *controller) stats() Stats {
	st := Stats{Phi: c.last}
	if c.n == 0 {
		return st
	}
	n := float64(c.n)
	st.Mean = c.sum / n
	st.Var = max(0, c.sumSq/n-st.Mean*st.Mean)
	if st.Mean > 1e-12 {
		st.Chi = st.Var / st.Mean
	}
	if c.n > 1 && st.Var > 1e-18 {
		cov := c.lagSum/(n-1) - st.Mean*st.Mean
		st.Lag1 = max(-1, min(1, cov/st.Var))
	}
	x := (st.Mean-c.cfg.PhiC)/c.cfg.Width + c.cfg.KChi*(st.Chi-c.cfg.Chi0)
	st.Target = c.cfg.DMax / (1 + math.Exp(-x))
	return st
}

// update observes φ and moves D toward its target.
func (c *controller) update(phi float64) {
	c.observe(phi)
	c.overridden = false
	c.d += c.cfg.Beta * (c.stats().Target - c.d)
}

// override sets D from a policy's action (clamped to [0, D_max]).
func (c *controller) override(d float64) {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return
	}
	c.d = max(0, min(c.cfg.DMax, d))
	c.overridden = true
}
