package env

import (
	"math"
)

// tokens is the token economy of docs/teg.md §6 (decayed usage, as in
// Slurm's fair-share factor with PriorityDecayHalfLife) plus per-service
// bookkeeping the energy function needs.
type tokens struct {
	cfg     *TEGConfig
	lambda  float64 // evaporation rate, 1/s
	tenants map[int]int
	bal     []float64 // B_k
	rate    []float64 // u_k: current earning rate, token units per second
	// capRate is the earning rate of the whole cluster busy: the bound of
	// total supply is capRate/λ.
	capRate float64

	// Per service (indexed by Job.Service, which the workload keeps small):
	affinity    []float32     // affinity weight a_j
	replicas    []int         // live replicas (queued or running)
	serviceLive []int32       // running replicas
	svcRacks    [][]rackCount // running replicas per rack
}

// rackCount is a service's running replicas in one rack.
type rackCount struct {
	rack, n int32
}

func (t *tokens) init(c *Cluster, cfg *TEGConfig, services int) {
	t.cfg = cfg
	if cfg.HalfLife > 0 {
		t.lambda = math.Ln2 / cfg.HalfLife
	}
	t.tenants = map[int]int{}
	t.affinity = make([]float32, services)
	t.replicas = make([]int, services)
	t.serviceLive = make([]int32, services)
	t.svcRacks = make([][]rackCount, services)
	// Replicas usually sit in a few racks: back the first few entries of
	// every service from one buffer, so a new service does not allocate.
	const perService = 8
	buf := make([]rackCount, services*perService)
	for k := range t.svcRacks {
		t.svcRacks[k] = buf[k*perService : k*perService : (k+1)*perService]
	}
	for i := range c.Machines {
		t.capRate += float64(c.Machines[i].CPU)/1000 + cfg.GPUWeight*float64(c.Machines[i].GPUs)
	}
}

// index maps a tenant ID to a dense index, adding new tenants.
func (t *tokens) index(tenant int) int {
	k, ok := t.tenants[tenant]
	if !ok {
		k = len(t.bal)
		t.tenants[tenant] = k
		t.bal = append(t.bal, 0)
		t.rate = append(t.rate, 0)
	}
	return k
}

// earn adds (sign +1) or removes a running job's earning rate: cores plus
// GPUWeight per GPU.
func (t *tokens) earn(k int, j *Job, sign float64) {
	t.rate[k] += sign * (float64(j.CPU)/1000 + t.cfg.GPUWeight*float64(j.GPUDemand())/MilliGPU)
	if t.rate[k] < 1e-9 {
		t.rate[k] = max(0, t.rate[k])
	}
}

// decay advances balances by dt seconds in closed form:
// B(t+dt) = B·e^{-λdt} + u·(1 - e^{-λdt})/λ (u·dt when λ = 0).
func (t *tokens) decay(dt float64) {
	if t.lambda == 0 {
		for k := range t.bal {
			t.bal[k] += t.rate[k] * dt
		}
		return
	}
	e := math.Exp(-t.lambda * dt)
	g := (1 - e) / t.lambda
	for k := range t.bal {
		t.bal[k] = t.bal[k]*e + t.rate[k]*g
	}
}

// supply is the total token balance.
func (t *tokens) supply() float64 {
	s := 0.0
	for _, b := range t.bal {
		s += b
	}
	return s
}

// SupplyBound is the largest supply the cluster can sustain: capRate/λ
// (infinite without evaporation).
func (t *tokens) SupplyBound() float64 {
	if t.lambda == 0 {
		return math.Inf(1)
	}
	return t.capRate / t.lambda
}

// share is S_k: the balance of a tenant that used its fair share of the
// cluster forever.
func (t *tokens) share() float64 {
	if t.lambda == 0 || len(t.bal) == 0 {
		return math.Inf(1)
	}
	return t.capRate / float64(len(t.bal)) / t.lambda
}

// serviceRack counts a service's running replicas per rack.
func (t *tokens) serviceRack(svc, rack int, delta int32) {
	t.serviceLive[svc] += delta
	rs := t.svcRacks[svc]
	for k := range rs {
		if rs[k].rack == int32(rack) {
			rs[k].n += delta
			if rs[k].n == 0 {
				rs[k] = rs[len(rs)-1]
				t.svcRacks[svc] = rs[:len(rs)-1]
			}
			return
		}
	}
	t.svcRacks[svc] = append(rs, rackCount{rack: int32(rack), n: delta})
}

// rackShare is A_j(i): the fraction of a service's running replicas in a
// rack.
func (t *tokens) rackShare(svc, rack int) float64 {
	live := t.serviceLive[svc]
	if live == 0 {
		return 0
	}
	for _, rc := range t.svcRacks[svc] {
		if rc.rack == int32(rack) {
			return float64(rc.n) / float64(live)
		}
	}
	return 0
}

// tenantQueues holds one FIFO queue per tenant. A scheduling pass merges
// their heads by priority: within a tenant the oldest job has the highest
// priority (same balance, longest wait), so a k-way merge over tenant heads
// yields the global priority order at O(tenants) per job.
type tenantQueues struct {
	q   [][]int32 // per tenant; -1 marks a removed entry until compact
	n   int       // live entries
	pos []int     // merge cursor per tenant during a pass
	key []float64
	// dirty is set when entries were marked removed since the last compact.
	dirty bool
}

func (tq *tenantQueues) push(k int, id int32) {
	for len(tq.q) <= k {
		tq.q = append(tq.q, nil)
		tq.pos = append(tq.pos, 0)
		tq.key = append(tq.key, 0)
	}
	tq.q[k] = append(tq.q[k], id)
	tq.n++
}

// priority is a queued job's priority: 2^(-B_k/S_k) plus its wait over
// AgeScale with tokens on; its wait alone without.
func (tq *tenantQueues) priority(s *Sim, id int) float64 {
	r := &s.jobs[id]
	age := (s.now - r.queuedAt) / s.teg.AgeScale
	if !s.teg.Tokens {
		return age
	}
	return math.Exp2(-s.tok.bal[r.tenant]/s.tok.share()) + age
}

// begin starts a merge pass.
func (tq *tenantQueues) begin(s *Sim) {
	for k := range tq.q {
		tq.pos[k] = 0
		tq.advance(s, k)
	}
}

// advance moves tenant k's cursor past removed entries and caches its
// head's merge key (-Inf when exhausted).
func (tq *tenantQueues) advance(s *Sim, k int) {
	q := tq.q[k]
	for tq.pos[k] < len(q) && q[tq.pos[k]] < 0 {
		tq.pos[k]++
	}
	if tq.pos[k] >= len(q) {
		tq.key[k] = math.Inf(-1)
		return
	}
	id := int(q[tq.pos[k]])
	if s.teg.Tokens {
		tq.key[k] = tq.priority(s, id)
	} else {
		tq.key[k] = -s.jobs[id].queuedAt // plain FIFO across tenants
	}
}

// nextBest returns the tenant and index of the best remaining head and
// advances past it.
func (tq *tenantQueues) nextBest(s *Sim) (t, k int, ok bool) {
	best := -1
	for i, key := range tq.key {
		if key == math.Inf(-1) {
			continue
		}
		if best < 0 || key > tq.key[best] {
			best = i
		}
	}
	if best < 0 {
		return 0, 0, false
	}
	k = tq.pos[best]
	tq.pos[best]++
	tq.advance(s, best)
	return best, k, true
}

// take marks entry k of tenant t removed (placed or cancelled); compact
// drops it later, so merge cursors stay valid during a pass.
func (tq *tenantQueues) take(t, k int) {
	tq.q[t][k] = -1
	tq.n--
	tq.dirty = true
}

// compact drops removed entries.
func (tq *tenantQueues) compact() {
	if !tq.dirty {
		return
	}
	tq.dirty = false
	n := 0
	for k, q := range tq.q {
		keep := q[:0]
		for _, id := range q {
			if id >= 0 {
				keep = append(keep, id)
			}
		}
		tq.q[k] = keep
		n += len(keep)
	}
	tq.n = n
}

// findService returns the youngest queued replica of service svc other
// than except, -1 if none.
func (tq *tenantQueues) findService(s *Sim, svc, except int) int {
	best, bestAt := -1, math.Inf(-1)
	for _, q := range tq.q {
		for _, id := range q {
			if id < 0 || int(id) == except || s.w.Jobs[id].Service != svc {
				continue
			}
			if at := s.jobs[id].queuedAt; at >= bestAt {
				best, bestAt = int(id), at
			}
		}
	}
	return best
}

// remove takes job id out of its queue.
func (tq *tenantQueues) remove(id int) {
	for k, q := range tq.q {
		for i, x := range q {
			if int(x) == id {
				tq.take(k, i)
				return
			}
		}
	}
}
