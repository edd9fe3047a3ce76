package env

import (
	"math"
	"slices"
)

// ScoredPairRef is one (job, GPU type) pair a scored policy may allocate:
// Job indexes RoundState.Jobs, Type RoundState.Types.
type ScoredPairRef struct {
	Job, Type int
}

// ScoredFeatureSet holds the features of every pair of a round state that
// a scored policy may allocate: the pairs where the job runs (positive
// throughput) and its gang fits the type's capacity, in job then type
// order. ScoredPolicy.Allocate scores these rows, and offline learning
// (rl.TrainRoundOffline) fits weights to them, so both read one
// computation. Its buffers are reused by Compute.
type ScoredFeatureSet struct {
	// Dim is the number of features per pair: len(ScoredFeatureNames).
	Dim int
	// Pairs are the allocatable pairs, job then type order.
	Pairs []ScoredPairRef
	// X holds Dim features per pair, row-major, in ScoredFeatureNames
	// order.
	X []float64
}

// Row returns the features of pair i (a view into X).
func (fs *ScoredFeatureSet) Row(i int) []float64 { return fs.X[i*fs.Dim : (i+1)*fs.Dim] }

// Compute fills fs with the features of s's allocatable pairs. prev maps a
// job ID to the GPU type index it was allocated in the previous round; a
// job absent from it did not run. clairvoyant adds ClairvoyantFeature,
// which reads the job's remaining steps.
func (fs *ScoredFeatureSet) Compute(s *RoundState, prev map[int]int, clairvoyant bool) {
	nf, nt := len(ScoredFeatureNames(clairvoyant)), len(s.Types)
	fs.Dim = nf
	fs.Pairs, fs.X = fs.Pairs[:0], fs.X[:0]
	gpus, demand := 0, 0
	for _, c := range s.Capacity {
		gpus += c
	}
	for _, j := range s.Jobs {
		demand += j.Scale
	}
	load := math.Log1p(float64(demand) / math.Max(1, float64(gpus)))
	for i, j := range s.Jobs {
		row := s.Throughput[i*nt : (i+1)*nt]
		best, spread, ageH, served := jobStats(s, i)
		if best == 0 {
			continue
		}
		prevT, running := prev[j.ID]
		for t, v := range row {
			if v <= 0 || j.Scale > s.Capacity[t] {
				continue
			}
			fs.Pairs = append(fs.Pairs, ScoredPairRef{Job: i, Type: t})
			at := len(fs.X)
			fs.X = slices.Grow(fs.X, nf)[:at+nf]
			f := fs.X[at:]
			f[0], f[1], f[2], f[3] = 1, math.Log1p(j.Attained/3600), math.Log1p(ageH), math.Log2(float64(j.Scale))
			f[4] = math.Log(v / best)
			f[5] = float64(b2f(running && prevT == t))
			f[6], f[7], f[8] = float64(b2f(running)), spread, served
			f[9] = f[4] * load
			if clairvoyant {
				f[10] = math.Log1p(j.StepsLeft / v / 3600)
			}
		}
	}
}

// jobStats is what the learned policies read of job i beyond its own
// fields: its best throughput over the types (0: it runs nowhere), the
// log of best over mean throughput where it runs (how much type matters
// to it; 0 when it runs nowhere), its age in hours and the share of its
// life it has run (attained GPU-seconds over scale × age, at most 1).
func jobStats(s *RoundState, i int) (best, spread, ageH, served float64) {
	nt := len(s.Types)
	j := &s.Jobs[i]
	sum, n := 0.0, 0
	for _, v := range s.Throughput[i*nt : (i+1)*nt] {
		if v > 0 {
			best, sum, n = math.Max(best, v), sum+v, n+1
		}
	}
	ageH = math.Max(0, s.Time-j.Arrival) / 3600
	if ageH > 0 {
		served = math.Min(1, j.Attained/(float64(j.Scale)*ageH*3600))
	}
	if best > 0 {
		spread = math.Log(best * float64(n) / sum)
	}
	return best, spread, ageH, served
}
