package rl

import (
	"math"

	"github.com/tegrl/tegrl/env"
)

// Normalisation of the fit features: the observation's resource scales
// (docs/observation.md), so that they compare with the machine rows.
const (
	fitCPUNorm = 64000.0
	fitMemNorm = 262144.0
	fitGPUNorm = 8000.0
	// energyClip bounds the energy features, in units of the temperature.
	energyClip = 20.0
)

// SparseAbove is the cluster size above which a decision refreshes only its
// candidates' rows (env.Sim.ObserveSparse), so that it costs O(K) however
// large the cluster: candidates are then always drawn, and two global
// features are estimates (see ObserveSparse). Up to it, every machine that
// admits the job is a candidate when there are at most K of them.
const SparseAbove = 256

// Featurizer turns a Decision into a policy sample. It keeps the
// observation tensors between decisions, so that refreshes are
// incremental (see env.Tensors).
type Featurizer struct {
	t    env.Tensors
	cand []int
	e    []float64 // candidates' energies
	frag []float64 // and the GPU fragmentation placing the job would add
	// Force, when >= 0, is a machine that must be among the candidates
	// (offline learning from another scheduler's decisions: its choice
	// must be one the policy could make). -1 in normal use.
	Force int
	// Saturation selects the saturation features (appendSaturation).
	Saturation bool
	fgd        env.FGD
	ranked     []env.Ranked
	// The cluster whose rack positions pos holds (graph rows).
	topo *env.Cluster
	pos  []int32
}

// Append adds d's sample to s and reports whether there is one: false when
// the decision is outside a TEG simulation or no machine admits the job.
func (f *Featurizer) Append(d Decision, s *Samples) bool {
	obs := d.Obs
	if obs != nil && f.Saturation {
		return f.appendSaturation(d, s)
	}
	if obs == nil || obs.TEG == nil {
		return false
	}
	K := s.K
	f.cand = f.cand[:0]
	sparse := len(obs.State.M) > SparseAbove
	if sparse {
		// O(K): draw the candidates first, then refresh only their rows.
		f.cand = obs.TEG.Candidates(&obs.Req, K, d.RNG, f.cand)
		f.force(K)
		if len(f.cand) == 0 || !obs.FillSparse(&f.t, f.cand, obs.TEG.Draws) {
			return false
		}
	} else {
		f.t.PendingOnly = true // the rows of running jobs are not features
		if !obs.FillTensors(&f.t) {
			return false
		}
		n := 0
		for _, ok := range f.t.Mask {
			if ok {
				n++
			}
		}
		if n <= K {
			for i, ok := range f.t.Mask {
				if ok {
					f.cand = append(f.cand, i)
				}
			}
		} else {
			f.cand = obs.TEG.Candidates(&obs.Req, K, d.RNG, f.cand)
		}
		f.force(K)
	}
	t := &f.t
	if len(f.cand) == 0 {
		return false
	}
	// Langevin energies: relative to the best candidate in units of the
	// temperature, and as the log of the Boltzmann probability the pure
	// governor would give each candidate.
	temp := max(obs.TEG.Temperature(), 1e-9)
	f.e, f.frag = f.e[:0], f.frag[:0]
	emin := math.Inf(1)
	for _, i := range f.cand {
		e, frag := obs.TEG.EnergyFrag(obs.Job, &obs.Req, i)
		f.e, f.frag = append(f.e, e), append(f.frag, frag)
		emin = min(emin, e)
	}
	if math.IsInf(emin, 0) || math.IsNaN(emin) {
		emin = 0 // every candidate unreachable on the field: no energy ranking
	}
	var z float64
	for _, e := range f.e {
		z += math.Exp(-max(0, e-emin) / temp)
	}
	logZ := math.Log(max(z, 1e-300))

	cand, nodes, ctx := s.grow()
	j := s.Len() - 1
	st := obs.State
	req := &obs.Req
	const C = env.HistoryChannels
	for k, i := range f.cand {
		row := cand[k*CandFeatures : (k+1)*CandFeatures]
		copy(row, t.Machine[i*env.MachineFeatures:(i+1)*env.MachineFeatures])
		x := row[env.MachineFeatures:]
		h := t.History[i*env.HistoryLen*C : (i+1)*env.HistoryLen*C]
		copy(x[:C], h[(env.HistoryLen-1)*C:])
		var mean [C]float32 // in registers, not through the row
		for step := 0; step < env.HistoryLen; step++ {
			for c := 0; c < C; c++ {
				mean[c] += h[step*C+c] / env.HistoryLen
			}
		}
		copy(x[C:2*C], mean[:])
		x = x[2*C:]
		m := &st.M[i]
		x[0] = float32(float64(m.FreeCPU-req.CPU) / fitCPUNorm)
		x[1] = float32(float64(m.FreeMem-req.Mem) / fitMemNorm)
		x[2] = float32(float64(int64(m.IdleGPU)-req.GPUDemand()) / fitGPUNorm)
		// Energies are infinite on machines the field marks unreachable:
		// every energy feature is clamped, so rows stay finite.
		rel := max(0, f.e[k]-emin) / temp
		if math.IsNaN(rel) {
			rel = energyClip
		}
		x[3] = float32(-min(rel, energyClip) / energyClip)
		x[4] = float32(max(-rel-logZ, -energyClip) / energyClip)
		x[5] = float32(max(-energyClip, min(energyClip, math.Copysign(math.Log1p(math.Abs(f.e[k])), f.e[k]))) / 5)
		x[6] = float32(f.frag[k] / fitGPUNorm)
		rate, over := obs.TEG.Contention(obs.Job, req, i)
		x[7] = float32(rate)
		x[8] = float32(min(over, 2))
		x[9] = float32(min(over, 2) * float64(st.Jobs(i)) / 16)
		nodes[k] = int32(i)
	}
	copy(ctx, t.Global)
	copy(ctx[env.GlobalFeatures:], t.Pending)
	if s.WithGraph {
		f.fillGraph(s.graphRows(j), st, t.History, f.cand)
	}
	s.Valid[j] = int32(len(f.cand))
	if obs.Job.Service >= 0 {
		s.Service[j] = 1
	}
	return true
}

// force puts the Force machine among the candidates (in place of the last
// one when there are K already).
func (f *Featurizer) force(K int) {
	if f.Force < 0 || containsNode(f.cand, f.Force) {
		return
	}
	if len(f.cand) == K {
		f.cand[K-1] = f.Force
	} else {
		f.cand = append(f.cand, f.Force)
	}
}

func containsNode(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
