package serve

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"hash/fnv"
	"math"
	"sync"
	"sync/atomic"
)

// ArmConfig configures one arm of the A/B router.
type ArmConfig struct {
	// Name labels the arm in metrics and the API ("a", "b").
	Name string
	// Spec is a built-in scheduler name (env.SchedulerNames), a policy
	// file (.safetensors, or a training output directory), or "hot": no
	// policy until one is hot-loaded.
	Spec string
	// Weight is the arm's share of the traffic (relative to the others).
	Weight float64
}

// arm is one arm: its serving policy, swapped atomically, and its
// statistics.
type arm struct {
	cfg ArmConfig
	cur atomic.Pointer[Policy]
	// cut is the arm's upper bound in [0, 1] of the hashed job key.
	cut float64
	// decideTime observes its decisions' time (the labelled child of the
	// histogram, looked up once).
	decideTime prometheus.Observer

	mu sync.Mutex
	st armStats
}

// armStats are an arm's A/B counters.
type armStats struct {
	decisions, placed, waited, invalid, projected int64
	outcomes                                      int64
	rewardN                                       int64
	rewardSum, rewardSumSq                        float64
	successN, successes                           int64
	slaN, slaViolations                           int64
	jctN                                          int64
	jctSum                                        float64
	waitN                                         int64
	waitSum                                       float64
}

// router picks an arm per job key: the key's hash, uniform in [0, 1),
// falls into one arm's share, so a job stays on its arm across requests
// and restarts.
type router struct {
	arms []*arm
}

func newRouter(cfgs []ArmConfig) (*router, error) {
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("no arms")
	}
	total := 0.0
	seen := map[string]bool{}
	for _, c := range cfgs {
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("arm with empty name")
		case seen[c.Name]:
			return nil, fmt.Errorf("arm %q configured twice", c.Name)
		case !(c.Weight >= 0) || math.IsInf(c.Weight, 0):
			return nil, fmt.Errorf("arm %q: weight %v must be finite and >= 0", c.Name, c.Weight)
		case c.Spec == "":
			return nil, fmt.Errorf("arm %q: empty scheduler", c.Name)
		}
		seen[c.Name] = true
		total += c.Weight
	}
	if !(total > 0) {
		return nil, fmt.Errorf("arm weights sum to %v, want > 0", total)
	}
	r := &router{}
	acc := 0.0
	for _, c := range cfgs {
		acc += c.Weight
		r.arms = append(r.arms, &arm{cfg: c, cut: acc / total})
	}
	r.arms[len(r.arms)-1].cut = 1
	return r, nil
}

// keyUnit maps a job key to [0, 1): its FNV-1a hash, mixed by a
// splitmix64 step (FNV's high bits barely differ for keys that differ in
// their last characters, such as ns/job-17 and ns/job-18).
func keyUnit(key string) float64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return float64(splitmix(h.Sum64())>>11) / (1 << 53)
}

// pick returns the arm of key.
func (r *router) pick(key string) *arm {
	u := keyUnit(key)
	for _, a := range r.arms {
		if u < a.cut {
			return a
		}
	}
	return r.arms[len(r.arms)-1]
}

// byName returns the arm named name, or nil.
func (r *router) byName(name string) *arm {
	for _, a := range r.arms {
		if a.cfg.Name == name {
			return a
		}
	}
	return nil
}

// ArmSummary is one arm in GET /v1/ab.
type ArmSummary struct {
	Arm           string  `json:"arm"`
	Scheduler     string  `json:"scheduler"`
	PolicyVersion string  `json:"policy_version"`
	Weight        float64 `json:"weight"`
	Share         float64 `json:"share"` // of the key space
	Decisions     int64   `json:"decisions"`
	Placed        int64   `json:"placed"`
	Waited        int64   `json:"waited"`
	Projected     int64   `json:"projected"`
	Invalid       int64   `json:"invalid"`
	Outcomes      int64   `json:"outcomes"`
	// Means over the outcomes that reported each measurement; null with
	// none.
	RewardMean       *float64 `json:"reward_mean"`
	RewardStd        *float64 `json:"reward_std"`
	RewardN          int64    `json:"reward_n"`
	SuccessRate      *float64 `json:"success_rate"`
	SLAViolationRate *float64 `json:"sla_violation_rate"`
	MeanJCTS         *float64 `json:"mean_jct_s"`
	MeanWaitS        *float64 `json:"mean_wait_s"`
}

// ABSummary is the body of GET /v1/ab.
type ABSummary struct {
	Arms []ArmSummary `json:"arms"`
	// RewardWelchT is Welch's t statistic of the first two arms' mean
	// rewards (first minus second), null without two rewards per arm.
	RewardWelchT *float64 `json:"reward_welch_t"`
}

func ratio(num, den int64) *float64 {
	if den == 0 {
		return nil
	}
	x := float64(num) / float64(den)
	return &x
}

// mean is sum/n, or nil without samples or when not finite (JSON has no
// infinities: one would void the whole summary).
func mean(sum float64, n int64) *float64 {
	if n == 0 {
		return nil
	}
	return finitePtr(sum / float64(n))
}

func finitePtr(x float64) *float64 {
	if !finite(x) {
		return nil
	}
	return &x
}

func (r *router) summary() ABSummary {
	var out ABSummary
	prev := 0.0
	type mv struct {
		m, v float64
		n    int64
	}
	var moments []mv
	for _, a := range r.arms {
		a.mu.Lock()
		st := a.st
		a.mu.Unlock()
		s := ArmSummary{Arm: a.cfg.Name, Scheduler: a.cfg.Spec, Weight: a.cfg.Weight, Share: a.cut - prev,
			Decisions: st.decisions, Placed: st.placed, Waited: st.waited, Projected: st.projected, Invalid: st.invalid,
			Outcomes: st.outcomes, RewardN: st.rewardN,
			RewardMean: mean(st.rewardSum, st.rewardN), SuccessRate: ratio(st.successes, st.successN),
			SLAViolationRate: ratio(st.slaViolations, st.slaN), MeanJCTS: mean(st.jctSum, st.jctN), MeanWaitS: mean(st.waitSum, st.waitN)}
		prev = a.cut
		if p := a.cur.Load(); p != nil {
			s.PolicyVersion = p.Version
		}
		var m, v float64
		if st.rewardN > 1 {
			m = st.rewardSum / float64(st.rewardN)
			v = max(0, (st.rewardSumSq-float64(st.rewardN)*m*m)/float64(st.rewardN-1))
			s.RewardStd = finitePtr(math.Sqrt(v))
		}
		moments = append(moments, mv{m, v, st.rewardN})
		out.Arms = append(out.Arms, s)
	}
	if len(moments) >= 2 && moments[0].n > 1 && moments[1].n > 1 {
		a, b := moments[0], moments[1]
		se := math.Sqrt(a.v/float64(a.n) + b.v/float64(b.n))
		if se > 0 {
			out.RewardWelchT = finitePtr((a.m - b.m) / se)
		}
	}
	return out
}

// record adds an outcome to the arm's statistics and returns the arm's
// mean reward when the outcome has a reward. Rewards are bounded
// (MaxReward), so the sums stay finite.
func (a *arm) record(o *OutcomeRequest) *float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := &a.st
	st.outcomes++
	var m *float64
	if o.Reward != nil {
		st.rewardN++
		st.rewardSum += *o.Reward
		st.rewardSumSq += *o.Reward * *o.Reward
		m = mean(st.rewardSum, st.rewardN)
	}
	if o.Success != nil {
		st.successN++
		if *o.Success {
			st.successes++
		}
	}
	if o.SLAViolated != nil {
		st.slaN++
		if *o.SLAViolated {
			st.slaViolations++
		}
	}
	if o.JCTS != nil {
		st.jctN++
		st.jctSum += *o.JCTS
	}
	if o.WaitS != nil {
		st.waitN++
		st.waitSum += *o.WaitS
	}
	return m
}
