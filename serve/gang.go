package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/tegrl/tegrl/env"
)

// Gang scheduling through the extender. A distributed training job runs as
// a pod group: N pods that are useless until all of them run. kube-
// scheduler places pods one at a time, so an extender that answered each
// member on its own could start half a gang and strand its GPUs. Instead,
// the first member the extender sees makes the whole group's plan: one
// node per member still to place, chosen at once by a gang placer over
// the candidate nodes' free capacity (env.GangPlacer: bestfit packs the
// gang onto the fewest nodes, in one rack when one holds it, on one GPU
// model). The plan reserves its capacity in the model (placeholder jobs),
// so other pods, gangs and /v1/decide calls see it taken. Each member then
// gets a slot of the plan, the same one every time it asks: filter passes
// only its slot's node and prioritize scores it MaxExtenderPriority. When
// a member is bound (the bind verb or the pod informer), its placeholder
// gives way to the pod itself. A group whose pods do not all fit at once
// gets no plan and every node fails with the reason (all or nothing); a
// plan whose members stop binding for GangTTL is released, and a model
// rebuilt (nodes added or removed, a full state update) drops the plans
// with the model they reserved in: the members still unbound plan again.
//
// A pod belongs to a group by the coscheduling label of the Kubernetes
// scheduler-plugins project and says the group's size in an annotation:
//
//	scheduling.x-k8s.io/pod-group   the group's name (within the namespace)
//	tegrl.io/gang-size              the number of pods of the group
//
// Every member must request the same resources.

// Pod group label and annotation.
const (
	// LabelPodGroup names a pod's group (sigs.k8s.io/scheduler-plugins,
	// coscheduling).
	LabelPodGroup = "scheduling.x-k8s.io/pod-group"
	annGangSize   = "tegrl.io/gang-size"
	// MaxGangSize bounds tegrl.io/gang-size.
	MaxGangSize = 1024
	// DefaultGangTTL is how long a plan keeps its reservations without a
	// member being bound.
	DefaultGangTTL = 2 * time.Minute
	// gangResPrefix starts the model's keys of reservations; a pod key
	// (namespace/name) never has it, since namespaces hold no colon, and
	// state updates may not use it.
	gangResPrefix = "tegrl-gang-reservation:"
	// gangPlacer is the placement of a group's members.
	gangPlacer = "bestfit"
	// maxGangPlans bounds the plans in flight.
	maxGangPlans = 4096
	// maxGangReplans bounds the placements tried for one plan when the
	// safety layer refuses a reservation the free capacity allowed.
	maxGangReplans = 8
)

// podGroup is a pod's group: namespace/name and its size; Key "" for a pod
// outside any group.
type podGroup struct {
	Key  string
	Size int
}

// podGang reads a pod's group.
func podGang(p *v1.Pod) (podGroup, error) {
	name, ok := p.Labels[LabelPodGroup]
	if !ok || name == "" {
		return podGroup{}, nil
	}
	ns := p.Namespace
	if ns == "" {
		ns = "default"
	}
	g := podGroup{Key: ns + "/" + name}
	s, ok := p.Annotations[annGangSize]
	if !ok {
		return g, fieldErr("Pod.metadata.annotations["+annGangSize+"]", "missing: a pod of group %q must say the group's size", g.Key)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxGangSize {
		return g, fieldErr("Pod.metadata.annotations["+annGangSize+"]", "%q is not a pod count in [1, %d]", s, MaxGangSize)
	}
	g.Size = n
	return g, nil
}

// gangPlan is one group's placement: a slot per member not yet bound.
type gangPlan struct {
	size    int
	job     JobJSON // the members' requests
	model   *model  // the model its reservations live in
	slots   []gangSlot
	expires time.Time
}

// gangSlot is one member's place in a plan.
type gangSlot struct {
	node string
	res  string // the reservation's job key in the model; "" once a pod took its place
	pod  string // the member assigned to it ("" none yet)
}

// gangState is the extender's plans (s.mu guards it).
type gangState struct {
	plans  map[string]*gangPlan
	ttl    time.Duration
	now    func() time.Time
	seq    uint64
	placer env.GangPlacer
	takes  []env.PlaceTake
}

func (g *gangState) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

func (g *gangState) life() time.Duration {
	if g.ttl > 0 {
		return g.ttl
	}
	return DefaultGangTTL
}

// sameRequests reports whether two members request the same resources.
func sameRequests(a, b *JobJSON) bool {
	return a.CPUMilli == b.CPUMilli && a.MemMiB == b.MemMiB && a.GPUs == b.GPUs && a.GPUMilli == b.GPUMilli &&
		slices.Equal(a.GPUModels, b.GPUModels)
}

// gangSweep releases expired plans and forgets those of a replaced model
// (s.mu held).
func (s *Service) gangSweep() {
	g := &s.kube.gang
	if len(g.plans) == 0 {
		return
	}
	now := g.clock()
	for key, p := range g.plans {
		switch {
		case p.model != s.model:
			delete(g.plans, key) // its reservations went with the model
			s.gangEvent("lost")
		case now.After(p.expires):
			s.gangRelease(key, p)
			s.gangEvent("expired")
			s.log.Info("pod group plan expired: reservations released", "group", key)
		case s.gangBroken(p):
			s.gangRelease(key, p) // its members plan again
			s.gangEvent("lost")
			s.log.Info("pod group plan lost a node: reservations released", "group", key)
		}
	}
}

// gangBroken reports whether a reservation of p was lost (its machine
// went down) or sits on a node closed since (s.mu held).
func (s *Service) gangBroken(p *gangPlan) bool {
	for _, sl := range p.slots {
		if sl.res == "" {
			continue
		}
		if _, ok := s.model.jobs[sl.res]; !ok || s.kubeClosed(sl.node) {
			return true
		}
	}
	return false
}

// gangEvent counts a plan event and sets the plans gauge (s.mu held).
func (s *Service) gangEvent(event string) {
	s.kube.initMetrics(s.met.reg)
	s.kube.planEv.WithLabelValues(event).Inc()
	s.kube.plans.Set(float64(len(s.kube.gang.plans)))
}

// gangRelease stops a plan's reservations and forgets it (s.mu held).
func (s *Service) gangRelease(key string, p *gangPlan) {
	for k := range p.slots {
		s.gangUnreserve(p, k)
	}
	delete(s.kube.gang.plans, key)
}

// gangUnreserve stops slot k's reservation, if it holds one (s.mu held).
func (s *Service) gangUnreserve(p *gangPlan, k int) {
	sl := &p.slots[k]
	if sl.res == "" {
		return
	}
	if m := s.model; m != nil && m == p.model {
		if id, ok := m.jobs[sl.res]; ok {
			if err := m.live.Stop(id); err != nil {
				s.log.Warn("stopping a pod group reservation", "key", sl.res, "err", err)
			}
			delete(m.jobs, sl.res)
			delete(m.keys, id)
		}
	}
	sl.res = ""
}

// gangBound counts group's members running in the model (s.mu held).
func (s *Service) gangBound(group string) int {
	n := 0
	for key, kp := range s.kube.pods {
		if kp.group == group && s.kubeInModel(key) {
			n++
		}
	}
	return n
}

// gangSlotFor returns pod's slot in its group's plan, making the plan when
// the group has none (s.mu held). An error says why the pod gets no slot;
// with the plan infeasible it is a *gangUnfit.
func (s *Service) gangSlotFor(ctx context.Context, gr podGroup, pod string, js *JobJSON, names []string) (*gangPlan, int, error) {
	s.gangSweep()
	g := &s.kube.gang
	p := g.plans[gr.Key]
	if p != nil {
		if p.size != gr.Size {
			return nil, -1, fieldErr("Pod.metadata.annotations["+annGangSize+"]", "%d, but group %q was planned for %d pods", gr.Size, gr.Key, p.size)
		}
		if !sameRequests(&p.job, js) {
			return nil, -1, fieldErr("Pod", "its requests differ from the other pods of group %q (cpu %dm, memory %d MiB, %d GPUs): a group's pods must request the same", gr.Key, p.job.CPUMilli, p.job.MemMiB, p.job.GPUs)
		}
		for k := range p.slots {
			if p.slots[k].pod == pod {
				return p, k, nil
			}
		}
	}
	if ctx.Value(noReserveKey{}) != nil {
		return nil, -1, &roleError{"a pod group's plan reserves capacity: planning or joining one needs the write role (kube-scheduler's client certificate has it)"}
	}
	if p == nil {
		if len(g.plans) >= maxGangPlans {
			return nil, -1, &conflictError{fmt.Sprintf("%d pod group plans in flight, the most tegrl keeps: try again when some are bound or expire", maxGangPlans)}
		}
		var err error
		if p, err = s.gangPlan(gr, js, names); err != nil {
			if unfit := (*gangUnfit)(nil); errors.As(err, &unfit) {
				s.gangEvent("unfit")
			}
			return nil, -1, err
		}
		if g.plans == nil {
			g.plans = map[string]*gangPlan{}
		}
		g.plans[gr.Key] = p
		s.gangEvent("planned")
	}
	free := -1
	for k := range p.slots {
		switch sl := &p.slots[k]; {
		case sl.pod == pod:
			return p, k, nil
		case sl.pod == "" && sl.res != "" && free < 0:
			free = k
		}
	}
	if free < 0 {
		return nil, -1, fieldErr("Pod", "group %q has %d pods (%s) and every one of its places is taken", gr.Key, gr.Size, annGangSize)
	}
	p.slots[free].pod = pod
	return p, free, nil
}

// gangUnfit says a group's members do not fit at once.
type gangUnfit struct{ msg string }

func (e *gangUnfit) Error() string { return e.msg }

// gangPlan places a group's unbound members on the candidate nodes and
// reserves their capacity (s.mu held).
func (s *Service) gangPlan(gr podGroup, js *JobJSON, names []string) (*gangPlan, error) {
	m := s.model
	need := gr.Size - s.gangBound(gr.Key)
	if need <= 0 {
		return nil, fieldErr("Pod", "all %d pods of group %q run already (%s)", gr.Size, gr.Key, annGangSize)
	}
	j, err := m.job(js, "Pod", m.live.Now())
	if err != nil {
		return nil, err
	}
	l := m.live
	st, c := l.State(), l.Cluster()
	req := l.Request(&j)
	// Candidates that take at least one member, by GPU model (a gang on
	// mixed models runs at the slowest one's pace), then rack, then
	// machine.
	type cand struct{ i, model, rack, slots int }
	var cs []cand
	seen := map[int]bool{}
	for _, n := range names {
		i, ok := m.machines[n]
		if !ok || seen[i] || s.kubeClosed(n) {
			continue
		}
		seen[i] = true
		if why, _ := nodeReason(c, st, i, &req); why != "" {
			continue
		}
		k := memberSlots(&st.M[i], &req, need)
		if k > 0 {
			cs = append(cs, cand{i, st.Model(i), c.Machines[i].Rack, k})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.rack, b.rack), cmp.Compare(a.i, b.i))
	})
	g := &s.kube.gang
	if g.placer == nil {
		if g.placer, err = env.GangPlacerByName(gangPlacer); err != nil {
			return nil, err
		}
	}
	p := &gangPlan{size: gr.Size, job: *js, model: m, expires: g.clock().Add(g.life())}
	// Try each GPU model's nodes, the model with the most room first.
	type group struct{ lo, hi, slots int }
	var groups []group
	for lo := 0; lo < len(cs); {
		hi, sum := lo, 0
		for hi < len(cs) && cs[hi].model == cs[lo].model {
			sum += cs[hi].slots
			hi++
		}
		groups = append(groups, group{lo, hi, sum})
		lo = hi
	}
	slices.SortStableFunc(groups, func(a, b group) int { return cmp.Compare(b.slots, a.slots) })
	for _, gp := range groups {
		if gp.slots < need {
			break
		}
		part := cs[gp.lo:gp.hi]
		pr := env.PlaceRequest{GPUs: need, Typical: need, Free: make([]int, len(part)), Rack: make([]int, len(part))}
		for k, cd := range part {
			pr.Free[k] = cd.slots
			if k > 0 && cd.rack != part[k-1].rack {
				pr.Racks++
			}
			pr.Rack[k] = pr.Racks
		}
		pr.Racks++
		for range maxGangReplans {
			var ok bool
			g.takes, ok = g.placer.Place(&pr, g.takes[:0])
			if !ok {
				break
			}
			bad := s.gangReserve(p, &j, g.takes, func(k int) int { return part[k].i })
			if bad < 0 {
				return p, nil
			}
			// The safety layer refused a member the free capacity allowed:
			// that node holds fewer, place again.
			pr.Free[bad]--
		}
	}
	return nil, &gangUnfit{fmt.Sprintf("tegrl: the %d pods of group %s still to place (cpu %dm, memory %d MiB, %d GPUs each) do not fit at once on the candidate nodes",
		need, gr.Key, js.CPUMilli, js.MemMiB, js.GPUs)}
}

// gangReserve starts a reservation per member of takes (machine maps a
// take's server to the model's machine); on a refusal it stops those it
// started and returns the refusing take's server, else -1 (s.mu held).
func (s *Service) gangReserve(p *gangPlan, j *env.Job, takes []env.PlaceTake, machine func(int) int) int {
	m := s.model
	g := &s.kube.gang
	p.slots = p.slots[:0]
	for _, t := range takes {
		i := machine(t.Server)
		r := m.live.Request(j)
		for range t.GPUs {
			if !m.live.State().Admit(i, &r) {
				for k := range p.slots {
					s.gangUnreserve(p, k)
				}
				p.slots = p.slots[:0]
				return t.Server
			}
			g.seq++
			key := gangResPrefix + strconv.FormatUint(g.seq, 10)
			jj := *j
			jj.ID = usageKey(key)
			id, err := m.live.Start(&jj, i, -1)
			if err != nil {
				for k := range p.slots {
					s.gangUnreserve(p, k)
				}
				p.slots = p.slots[:0]
				return t.Server
			}
			m.jobs[key], m.keys[id] = id, key
			p.slots = append(p.slots, gangSlot{node: m.live.Cluster().Machines[i].Name, res: key})
		}
	}
	return -1
}

// memberSlots is how many members fit machine ms by its free cpu, memory
// and GPUs, at most need (the safety layer may admit fewer).
func memberSlots(ms *env.MachineState, r *env.Request, need int) int {
	k := need
	if r.CPU > 0 {
		k = min(k, int(ms.FreeCPU/r.CPU))
	}
	if r.Mem > 0 {
		k = min(k, int(ms.FreeMem/r.Mem))
	}
	switch {
	case r.GPUs == 0:
	case r.Milli >= env.MilliGPU:
		k = min(k, int(ms.FullFree)/r.GPUs)
	default:
		k = min(k, int(ms.IdleGPU/r.Milli))
	}
	return max(k, 0)
}

// gangTake is a member's bind: the pod takes the place of its slot's
// reservation, or, bound elsewhere, of a reservation on its node or of any
// unassigned one, so that the plan never holds more than the members
// still to bind (s.mu held).
func (s *Service) gangTake(group, pod, node string) {
	p := s.kube.gang.plans[group]
	if p == nil || p.model != s.model {
		return
	}
	// Its own slot first, then an unassigned one on its node, then any
	// unassigned one.
	own, here, other := -1, -1, -1
	for k, sl := range p.slots {
		switch {
		case sl.res == "":
		case sl.pod == pod:
			own = k
		case sl.pod == "" && sl.node == node && here < 0:
			here = k
		case sl.pod == "" && other < 0:
			other = k
		}
	}
	pick := own
	if pick < 0 {
		pick = here
	}
	if pick < 0 {
		pick = other
	}
	if pick < 0 {
		return
	}
	s.gangUnreserve(p, pick)
	p.slots[pick].pod = pod
	p.expires = s.kube.gang.clock().Add(s.kube.gang.life())
	for k := range p.slots {
		if p.slots[k].res != "" {
			return
		}
	}
	delete(s.kube.gang.plans, group) // every member is bound
	s.gangEvent("done")
}

// gangForget frees a deleted member's slot for another pod (s.mu held).
func (s *Service) gangForget(group, pod string) {
	if p := s.kube.gang.plans[group]; p != nil {
		for k := range p.slots {
			if sl := &p.slots[k]; sl.pod == pod && sl.res != "" {
				sl.pod = ""
			}
		}
	}
}

// gangFilter answers filter for a member: its slot's node passes, every
// other node fails (resolvable: another slot's or no member's place), and
// a group that does not fit fails every node (s.mu held).
func (s *Service) gangFilter(ctx context.Context, gr podGroup, pod string, js *JobJSON, names []string, pass []bool, failed, unresolvable map[string]string) (int, error) {
	p, k, err := s.gangSlotFor(ctx, gr, pod, js, names)
	var unfit *gangUnfit
	switch {
	case errors.As(err, &unfit):
		for _, n := range names {
			failed[n] = unfit.msg
		}
		return 0, nil
	case err != nil:
		return 0, err
	}
	node := p.slots[k].node
	why := "tegrl: pod group " + gr.Key + " places this pod on " + node
	for i, n := range names {
		_, known := s.model.machines[n]
		switch {
		case n == node:
			pass[i] = true
		case known:
			failed[n] = why
		default:
			unresolvable[n] = reasonUnknownNode
		}
	}
	return 0, nil
}

// gangNode is a member's planned node, for prioritize; "" when the group
// does not fit (s.mu held).
func (s *Service) gangNode(ctx context.Context, gr podGroup, pod string, js *JobJSON, names []string) (string, error) {
	p, k, err := s.gangSlotFor(ctx, gr, pod, js, names)
	if unfit := (*gangUnfit)(nil); errors.As(err, &unfit) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return p.slots[k].node, nil
}

// reservedKey reports whether a job key belongs to the pod group
// reservations, which state updates may not name.
func reservedKey(key string) bool { return strings.HasPrefix(key, gangResPrefix) }

// noReserveKey marks a request's context whose caller lacks the write
// role: it may read a member's place but not plan or join a group.
type noReserveKey struct{}

// withReserveRole marks ctx when r may not reserve capacity (s.allowed:
// the write role, open or held).
func (s *Service) withReserveRole(ctx context.Context, r *http.Request) context.Context {
	if ok, _, _ := s.allowed(r, RoleWrite); !ok {
		return context.WithValue(ctx, noReserveKey{}, true)
	}
	return ctx
}

// roleError is a refusal for want of a role.
type roleError struct{ msg string }

func (e *roleError) Error() string { return e.msg }
