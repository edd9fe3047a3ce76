package rl

import (
	"fmt"
	"iter"
	"sync"

	"github.com/tegrl/tegrl/env"
)

// SaturateSpec is the FGD saturation experiment as a training
// environment (docs/fgd.md): an episode is one seed's pod sequence on
// the GPU machines of the Alibaba cluster, each pod one decision. The
// objective is the GPU allocation at the end of arrivals, Σ of the GPUs
// each decision allocates; but which machine a pod goes to changes what is
// allocated only thousands of pods later, when pods start to be dropped,
// and a first version rewarded with the allocation alone learned nothing
// (entropy stayed at ln K over 1M decisions). So the reward is shaped, in
// GPUs: the allocation gain minus the fragmentation gain, a potential
// -F(M) that keeps the objective (Ng et al., 1999) and rewards at once
// what will leave GPUs unusable; and it is relative to FGD's run on the
// same seed at the same pod (an input-driven baseline, independent of the
// actions), so that the pods' sizes cancel out.
type SaturateSpec struct {
	Nodes string  `json:"nodes"` // Alibaba GPU 2023 nodes.csv
	Pods  string  `json:"pods"`  // its pods.csv
	Tune  float64 `json:"tune"`  // arrivals stop at Tune × GPU capacity (protocol: 1.3)
}

// SaturationWorkload is what a saturation episode runs on.
type SaturationWorkload struct {
	Cluster *env.Cluster // the GPU machines
	Trace   []env.Job
	Tune    float64
}

var (
	satMu    sync.Mutex
	satCache = map[SaturateSpec]*SaturationWorkload{}
)

// Load reads the trace once per process (actors in one process share it;
// it is read-only).
func (s SaturateSpec) Load() (*SaturationWorkload, error) {
	satMu.Lock()
	defer satMu.Unlock()
	if w, ok := satCache[s]; ok {
		return w, nil
	}
	if !(s.Tune > 0) {
		return nil, fmt.Errorf("saturate env: tune %v, want > 0 (the protocol uses 1.3)", s.Tune)
	}
	tr, err := env.LoadSaturationTrace(s.Nodes, s.Pods)
	if err != nil {
		return nil, fmt.Errorf("saturate env: %w", err)
	}
	sw := &SaturationWorkload{Cluster: tr.Cluster, Trace: tr.Jobs, Tune: s.Tune}
	satCache[s] = sw
	return sw, nil
}

// resetSaturation starts a saturation episode: env.Saturate runs as the
// coroutine, pausing in the proxy's Decide for every pod.
func (e *ClusterEnv) resetSaturation(seed uint64) (Decision, error) {
	sw, err := e.cfg.Saturation()
	if err != nil {
		return Decision{}, err
	}
	p := &proxy{e: e}
	e.sim, e.base, e.halt = nil, nil, false
	e.satRun, e.satErr, e.satState = env.SaturationRun{}, nil, nil
	// FGD's run on the same seed: its potential Φ = used - F(M) per pod.
	e.basePhi = e.basePhi[:0]
	if _, err := env.SaturateObserved(sw.Cluster, sw.Trace, &env.FGD{}, seed, sw.Tune, func(_ int, used int64, frag float64) {
		e.basePhi = append(e.basePhi, float64(used)-frag)
	}); err != nil {
		return Decision{}, fmt.Errorf("saturate env seed %d baseline: %w", seed, err)
	}
	e.pods, e.phi, e.lastPhi, e.lastBase = 0, 0, 0, 0
	e.next, e.stop = iter.Pull(iter.Seq[Decision](func(yield func(Decision) bool) {
		p.yield = yield
		e.satRun, e.satErr = env.SaturateObserved(sw.Cluster, sw.Trace, p, seed, sw.Tune, func(_ int, used int64, frag float64) {
			e.pods++
			e.phi = float64(used) - frag
		})
	}))
	d, ok := e.next()
	if !ok {
		if e.satErr != nil {
			return Decision{}, fmt.Errorf("saturate env seed %d: %w", seed, e.satErr)
		}
		d = Decision{}
	} else {
		// Both runs start from the same empty cluster: Φ = -F(M).
		e.satState = d.Obs.State
		frag, _ := d.Obs.State.Fragmentation()
		e.phi, e.lastPhi, e.lastBase = -frag, -frag, -frag
	}
	e.dec = d
	return d, nil
}

// satReward is the shaped reward since the last decision (see
// SaturateSpec), in GPUs.
func (e *ClusterEnv) satReward() float64 {
	if e.satState == nil || e.pods == 0 {
		return 0
	}
	k := min(e.pods, len(e.basePhi)) - 1
	base := e.basePhi[k]
	r := (e.phi - e.lastPhi) - (base - e.lastBase)
	e.lastPhi, e.lastBase = e.phi, base
	return r / env.MilliGPU * e.cfg.RewardScale
}

// SaturationRun is the finished saturation episode's outcome (zero for a
// cluster episode or before the end).
func (e *ClusterEnv) SaturationRun() env.SaturationRun { return e.satRun }

// Saturation features: the first columns of the candidate and context rows
// (the rest stay 0), so that samples, segments and the network keep one
// layout (CandFeatures, CtxFeatures) for both environments. A policy
// records which features it was trained on (PolicyConfig.Features).
const (
	satCandUsed = 12
	satCtxUsed  = 8
)

// appendSaturation featurises a saturation decision: the candidates are
// the K machines FGD scores best (FGD's choice first), so a decision costs
// what an FGD decision costs, and the policy learns which of them to
// prefer given what each placement leaves behind.
func (f *Featurizer) appendSaturation(d Decision, s *Samples) bool {
	obs := d.Obs
	st, req := obs.State, &obs.Req
	K := s.K
	f.ranked = f.fgd.Rank(obs, K, f.ranked[:0])
	if len(f.ranked) == 0 {
		return false
	}
	cand, nodes, ctx := s.grow()
	j := s.Len() - 1
	demand := req.GPUDemand()
	for k, rk := range f.ranked {
		i := rk.Machine
		m := &st.M[i]
		x := cand[k*CandFeatures : (k+1)*CandFeatures]
		gpus := len(st.GPUs(i))
		x[0] = float32(rk.Score) / 100
		x[1] = float32(k) / float32(K)
		x[2] = float32(float64(m.FreeCPU-req.CPU) / fitCPUNorm)
		x[3] = float32(float64(m.FreeMem-req.Mem) / fitMemNorm)
		x[4] = float32(float64(int64(m.IdleGPU)-demand) / fitGPUNorm)
		x[5] = float32(m.FullFree) / 8
		x[6] = float32(gpus) / 8
		if req.Share() {
			if g := st.BestFitGPU(i, req.Milli); g >= 0 {
				x[7] = float32(st.GPUs(i)[g]-req.Milli) / env.MilliGPU // the sliver left on its GPU
				x[8] = float32(st.Sharers(i)[g]) / 8
			}
		}
		x[9] = float32(st.Jobs(i)) / 16
		if int(m.IdleGPU) == gpus*env.MilliGPU {
			x[10] = 1 // an idle machine: placing here opens it
		}
		// The fragmentation drop FGD's score quantises (its 100 levels of
		// σ(Δ/1000) tie many machines).
		x[11] = float32(max(-5, min(5, f.fgd.FragDrop(obs, i, rk.GPU)/env.MilliGPU)))
		nodes[k] = int32(i)
	}
	ctx[0] = float32(float64(req.CPU) / fitCPUNorm)
	ctx[1] = float32(float64(req.Mem) / fitMemNorm)
	ctx[2] = float32(req.Milli) / env.MilliGPU
	ctx[3] = float32(req.GPUs) / 8
	if req.Share() {
		ctx[4] = 1
	}
	if req.GPUs == 0 {
		ctx[5] = 1
	}
	if st.CapGPU > 0 {
		ctx[6] = float32(float64(st.UsedGPU) / float64(st.CapGPU))
	}
	ctx[7] = float32(len(f.ranked)) / float32(K)
	s.Valid[j] = int32(len(f.ranked))
	return true
}

// placeGPU sets a's GPU to the one FGD scored on a's machine in the last
// saturation decision featurised (share pods; the others take the
// allocator's GPUs), so that choosing FGD's first candidate is FGD's
// decision exactly.
func (f *Featurizer) placeGPU(a env.Action) env.Action {
	if !f.Saturation || a.Node < 0 {
		return a
	}
	for _, rk := range f.ranked {
		if rk.Machine == a.Node {
			a.GPU = rk.GPU
			break
		}
	}
	return a
}
