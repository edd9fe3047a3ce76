package serve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// gangCluster is four 8-GPU A100 nodes in two racks (n1, n2 in r1; n3, n4
// in r2) and a 4-GPU V100 node n5.
func gangCluster(t testing.TB) (*Service, []string) {
	t.Helper()
	s := newKubeService(t)
	var nodes []*v1.Node
	for k, rack := range []string{"r1", "r1", "r2", "r2"} {
		nodes = append(nodes, testNode("n"+strconv.Itoa(k+1), 64, 512, 8, map[string]string{LabelRack: rack, LabelGPUModel: "A100"}))
	}
	nodes = append(nodes, testNode("n5", 64, 512, 4, map[string]string{LabelRack: "r3", LabelGPUModel: "V100"}))
	s.SyncCluster(nodes, nil)
	if s.model == nil {
		t.Fatal("no model")
	}
	return s, []string{"n1", "n2", "n3", "n4", "n5"}
}

// gangPod is member k of group ns team/name of size n, each with 4 GPUs.
func gangPod(group string, n, k int, gpus int64) *v1.Pod {
	p := testPod(group+"-"+strconv.Itoa(k), "8", "32Gi", gpus, map[string]string{annGangSize: strconv.Itoa(n)})
	p.Labels = map[string]string{LabelPodGroup: group}
	p.UID = types.UID("uid-" + p.Name)
	return p
}

// gangFilter runs filter for pod over names and returns the nodes that pass.
func gangFilterPass(t testing.TB, s *Service, pod *v1.Pod, names []string) ([]string, extenderv1.ExtenderFilterResult) {
	t.Helper()
	js, err := podJob(pod)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Filter(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}, &js)
	if err != nil {
		t.Fatalf("filter %s: %v", pod.Name, err)
	}
	return *res.NodeNames, res
}

// freeGPUs is the model's free GPU milli per node.
func freeGPUs(s *Service, names []string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int64, len(names))
	st := s.model.live.State()
	for k, n := range names {
		out[k] = int64(st.M[s.model.machines[n]].IdleGPU)
	}
	return out
}

// TestGangPlan: the first member of a four-pod group (4 GPUs each) plans
// the whole group at once: two pods each on the two nodes of one rack,
// on the A100s; each member passes exactly its own node, the same one
// every time it asks, and prioritize scores that node 10 and the others
// 0. The plan's reservations take the capacity from other pods, a fifth
// member gets no place, and a member asking with other requests or
// another size is refused with the reason.
func TestGangPlan(t *testing.T) {
	s, names := gangCluster(t)
	var got []string
	for k := range 4 {
		pass, res := gangFilterPass(t, s, gangPod("ring", 4, k, 4), names)
		if len(pass) != 1 {
			t.Fatalf("member %d passes %v (failed %v)", k, pass, res.FailedNodes)
		}
		got = append(got, pass[0])
		for _, n := range names {
			if n != pass[0] && !strings.Contains(res.FailedNodes[n], "places this pod on "+pass[0]) {
				t.Errorf("member %d, node %s: reason %q", k, n, res.FailedNodes[n])
			}
		}
	}
	if want := []string{"n1", "n1", "n2", "n2"}; !slices.Equal(got, want) {
		t.Fatalf("members on %v, want %v (one rack, packed)", got, want)
	}
	for k := range 4 { // asked again, in another order of nodes
		rev := slices.Clone(names)
		slices.Reverse(rev)
		if pass, _ := gangFilterPass(t, s, gangPod("ring", 4, 3-k, 4), rev); !slices.Equal(pass, []string{got[3-k]}) {
			t.Errorf("member %d asked again: %v, want %s", 3-k, pass, got[3-k])
		}
	}
	pod := gangPod("ring", 4, 2, 4)
	js, _ := podJob(pod)
	pl, err := s.Prioritize(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}, &js)
	if err != nil {
		t.Fatal(err)
	}
	for _, hp := range pl {
		want := int64(extenderv1.MinExtenderPriority)
		if hp.Host == got[2] {
			want = extenderv1.MaxExtenderPriority
		}
		if hp.Score != want {
			t.Errorf("prioritize %s: %d, want %d", hp.Host, hp.Score, want)
		}
	}
	if f := freeGPUs(s, names); !slices.Equal(f, []int64{0, 0, 8000, 8000, 4000}) {
		t.Errorf("free GPU milli %v: the reservations should hold n1 and n2", f)
	}
	other := testPod("solo", "1", "1Gi", 8, nil)
	if pass, _ := gangFilterPass(t, s, other, names); !slices.Equal(pass, []string{"n3", "n4"}) {
		t.Errorf("an 8-GPU pod passes %v, want n3 n4", pass)
	}
	js5, _ := podJob(gangPod("ring", 4, 4, 4))
	if _, err := s.Filter(&extenderv1.ExtenderArgs{Pod: gangPod("ring", 4, 4, 4), NodeNames: &names}, &js5); err == nil || !strings.Contains(err.Error(), "every one of its places is taken") {
		t.Errorf("fifth member: %v", err)
	}
	big := gangPod("ring", 4, 5, 8)
	jsb, _ := podJob(big)
	if _, err := s.Filter(&extenderv1.ExtenderArgs{Pod: big, NodeNames: &names}, &jsb); err == nil || !strings.Contains(err.Error(), "requests differ") {
		t.Errorf("member with other requests: %v", err)
	}
	resized := gangPod("ring", 5, 0, 4)
	jsr, _ := podJob(resized)
	if _, err := s.Filter(&extenderv1.ExtenderArgs{Pod: resized, NodeNames: &names}, &jsr); err == nil || !strings.Contains(err.Error(), "planned for 4") {
		t.Errorf("member with another size: %v", err)
	}
}

// TestGangAllOrNothing: a group that needs more than the nodes hold gets
// no plan: every node fails (resolvable) with the reason for each member,
// and nothing is reserved.
func TestGangAllOrNothing(t *testing.T) {
	s, names := gangCluster(t)
	before := freeGPUs(s, names)
	for k := range 2 {
		pass, res := gangFilterPass(t, s, gangPod("huge", 5, k, 8), names)
		if len(pass) != 0 || len(res.FailedNodes) != len(names) || !strings.Contains(res.FailedNodes["n1"], "do not fit at once") {
			t.Fatalf("member %d: pass %v, failed %v", k, pass, res.FailedNodes)
		}
	}
	if f := freeGPUs(s, names); !slices.Equal(f, before) {
		t.Errorf("free GPU milli %v after a refused group, want %v", f, before)
	}
	// A gang of 8-GPU pods larger than a rack spreads over racks of one
	// model; n5's V100s (4 GPUs) never take an 8-GPU member.
	var got []string
	for k := range 4 {
		pass, _ := gangFilterPass(t, s, gangPod("wide", 4, k, 8), names)
		got = append(got, pass...)
	}
	if want := []string{"n1", "n2", "n3", "n4"}; !slices.Equal(got, want) {
		t.Errorf("wide group on %v, want %v", got, want)
	}
}

// TestGangBind: as kube-scheduler binds the members (the bind verb), each
// pod takes its reservation's place: the model's free capacity stays as
// planned, and the plan is gone once every member runs; a later member
// of the full group is refused.
func TestGangBind(t *testing.T) {
	s, names := gangCluster(t)
	b := newFakeBinder()
	s.SetBinder(b)
	var pods []*v1.Pod
	var nodes []string
	for k := range 3 {
		p := gangPod("ring", 3, k, 4)
		pass, _ := gangFilterPass(t, s, p, names)
		pods, nodes = append(pods, p), append(nodes, pass[0])
		b.add(p)
	}
	planned := freeGPUs(s, names)
	for k, p := range pods {
		if err := s.Bind(context.Background(), &extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: p.Namespace, PodUID: p.UID, Node: nodes[k]}); err != nil {
			t.Fatal(err)
		}
		if f := freeGPUs(s, names); !slices.Equal(f, planned) {
			t.Fatalf("after binding member %d: free %v, want %v", k, f, planned)
		}
	}
	s.mu.Lock()
	plans := len(s.kube.gang.plans)
	s.mu.Unlock()
	if plans != 0 {
		t.Errorf("%d plans left after every member bound", plans)
	}
	for ev, want := range map[string]float64{"planned": 1, "done": 1, "expired": 0} {
		if got := testutil.ToFloat64(s.kube.planEv.WithLabelValues(ev)); got != want {
			t.Errorf("tegrl_serve_pod_group_events_total{event=%q} = %v, want %v", ev, got, want)
		}
	}
	if got := testutil.ToFloat64(s.kube.plans); got != 0 {
		t.Errorf("tegrl_serve_pod_group_plans = %v after the group bound", got)
	}
	late := gangPod("ring", 3, 9, 4)
	jsl, _ := podJob(late)
	if _, err := s.Filter(&extenderv1.ExtenderArgs{Pod: late, NodeNames: &names}, &jsl); err == nil || !strings.Contains(err.Error(), "run already") {
		t.Errorf("member of a full group: %v", err)
	}
}

// TestGangExpiry: a plan whose members stop binding for the TTL gives its
// reservations back; the next member plans again from the free capacity,
// counting the members already bound.
func TestGangExpiry(t *testing.T) {
	s, names := gangCluster(t)
	now := time.Unix(1000, 0)
	s.mu.Lock()
	s.kube.gang.now = func() time.Time { return now }
	s.mu.Unlock()
	before := freeGPUs(s, names)
	p0 := gangPod("ring", 4, 0, 4)
	pass, _ := gangFilterPass(t, s, p0, names)
	// The informer reports member 0 bound.
	bp := p0.DeepCopy()
	bp.Spec.NodeName = pass[0]
	s.UpsertPod(bp)
	now = now.Add(DefaultGangTTL + time.Second)
	gangFilterPass(t, s, testPod("other", "1", "1Gi", 0, nil), names) // any filter sweeps
	if f := freeGPUs(s, names); f[0] != before[0]-4000 || !slices.Equal(f[1:], before[1:]) {
		t.Errorf("free after expiry %v: want only member 0's GPUs taken (from %v)", f, before)
	}
	if got := testutil.ToFloat64(s.kube.planEv.WithLabelValues("expired")); got != 1 {
		t.Errorf("expired plans counted %v, want 1", got)
	}
	for k := 1; k < 4; k++ {
		if pass, _ := gangFilterPass(t, s, gangPod("ring", 4, k, 4), names); len(pass) != 1 {
			t.Fatalf("member %d after replanning: %v", k, pass)
		}
	}
	s.mu.Lock()
	slots := len(s.kube.gang.plans["team/ring"].slots)
	s.mu.Unlock()
	if slots != 3 {
		t.Errorf("replanned %d slots, want 3 (one member runs)", slots)
	}
}

// TestGangNodeDown: a plan that loses a reserved node (cordoned) is
// released and its members plan again elsewhere.
func TestGangNodeDown(t *testing.T) {
	s, names := gangCluster(t)
	pass, _ := gangFilterPass(t, s, gangPod("ring", 2, 0, 8), names)
	if !slices.Equal(pass, []string{"n1"}) {
		t.Fatalf("member 0 on %v", pass)
	}
	n := testNode("n1", 64, 512, 8, map[string]string{LabelRack: "r1", LabelGPUModel: "A100"})
	n.Spec.Unschedulable = true
	s.UpsertNode(n)
	pass, _ = gangFilterPass(t, s, gangPod("ring", 2, 0, 8), names)
	if slices.Contains(pass, "n1") || len(pass) != 1 {
		t.Errorf("member 0 after n1 was cordoned: %v", pass)
	}
}

// TestStateRefusesReservationKeys: a state update cannot start or stop a
// job under the reservations' keys.
func TestStateRefusesReservationKeys(t *testing.T) {
	s := newTestService(t, Config{})
	h := s.Handler()
	name := s.model.live.Cluster().Machines[0].Name
	for _, body := range []string{
		`{"started":[{"key":"` + gangResPrefix + `1","machine":"` + name + `","job":{"cpu_milli":100,"mem_mib":10}}]}`,
		`{"stopped":["` + gangResPrefix + `1"]}`,
	} {
		code, b := call(t, h, "POST", "/v1/state", body)
		if code != http.StatusBadRequest || !strings.Contains(string(b), "reservations") {
			t.Errorf("%s: %d %s", body, code, b)
		}
	}
}

// TestGangConcurrentProperty: members of several groups and other pods
// ask filter and prioritize from many goroutines at once, with binds and
// deletions between; at every quiet point each node's reserved and bound
// GPUs add up to what the model holds, no two members share a place, and
// a member's filter and prioritize agree. Run with -race.
func TestGangConcurrentProperty(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			s, names := gangCluster(t)
			b := newFakeBinder()
			s.SetBinder(b)
			groups := 1 + rng.IntN(3)
			var wg sync.WaitGroup
			type answer struct {
				pod, filter, prio string
			}
			ans := make(chan answer, 64)
			for g := range groups {
				size, gpus := 1+rng.IntN(4), []int64{1, 2, 4}[rng.IntN(3)]
				for k := range size {
					bind := rng.IntN(2) == 0
					wg.Add(1)
					go func() {
						defer wg.Done()
						p := gangPod("g"+strconv.Itoa(g), size, k, gpus)
						b.add(p)
						js, _ := podJob(p)
						fr, err := s.Filter(&extenderv1.ExtenderArgs{Pod: p, NodeNames: &names}, &js)
						if err != nil {
							t.Error(err)
							return
						}
						pl, err := s.Prioritize(&extenderv1.ExtenderArgs{Pod: p, NodeNames: &names}, &js)
						if err != nil {
							t.Error(err)
							return
						}
						a := answer{pod: p.Name}
						if len(*fr.NodeNames) == 1 {
							a.filter = (*fr.NodeNames)[0]
						}
						for _, hp := range pl {
							if hp.Score == extenderv1.MaxExtenderPriority {
								a.prio = hp.Host
							}
						}
						ans <- a
						if a.filter != "" && bind {
							_ = s.Bind(context.Background(), &extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: p.Namespace, PodUID: p.UID, Node: a.filter})
						}
					}()
				}
			}
			go func() { wg.Wait(); close(ans) }()
			for a := range ans {
				if a.filter != a.prio {
					t.Errorf("%s: filter passes %q, prioritize prefers %q", a.pod, a.filter, a.prio)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			st := s.model.live.State()
			held := map[string]int64{}
			seen := map[string]bool{}
			for _, p := range s.kube.gang.plans {
				for _, sl := range p.slots {
					if sl.res != "" {
						held[sl.node] += int64(p.job.GPUs) * 1000
					}
					if sl.pod != "" {
						if seen[sl.pod] {
							t.Errorf("pod %s holds two places", sl.pod)
						}
						seen[sl.pod] = true
					}
				}
			}
			for _, kp := range s.kube.pods {
				held[kp.node] += int64(kp.job.GPUs) * 1000
			}
			for _, n := range names {
				i := s.model.machines[n]
				total := int64(s.model.live.Cluster().Machines[i].GPUs) * 1000
				if got := total - int64(st.M[i].IdleGPU); got != held[n] {
					t.Errorf("node %s: model holds %d milli-GPU, reservations and pods %d", n, got, held[n])
				}
			}
		})
	}
}

// BenchmarkGangPlan plans a group of 16 four-GPU pods over 1,000 GPU nodes
// (the first member's filter: candidates, placement, reservations) and
// releases it.
func BenchmarkGangPlan(b *testing.B) {
	s := newKubeService(b)
	var nodes []*v1.Node
	names := make([]string, 1000)
	for k := range names {
		names[k] = fmt.Sprintf("n%04d", k)
		nodes = append(nodes, testNode(names[k], 64, 512, 8, map[string]string{LabelRack: "r" + strconv.Itoa(k/8), LabelGPUModel: "A100"}))
	}
	s.SyncCluster(nodes, nil)
	pod := gangPod("ring", 16, 0, 4)
	js, _ := podJob(pod)
	args := &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.Filter(args, &js)
		if err != nil || len(*res.NodeNames) != 1 {
			b.Fatal(err, res.NodeNames)
		}
		s.mu.Lock()
		s.gangRelease("team/ring", s.kube.gang.plans["team/ring"])
		s.mu.Unlock()
	}
}

// TestGangNeedsWriteRole: a plan reserves capacity, so a caller with only
// the read role can neither plan a group nor join one (an anonymous
// caller could otherwise hold the cluster), but may read the place of a
// member already planned.
func TestGangNeedsWriteRole(t *testing.T) {
	s, err := New(Config{Seed: 1, ReadToken: "r", WriteToken: "w"})
	if err != nil {
		t.Fatal(err)
	}
	s.SyncCluster([]*v1.Node{testNode("n1", 64, 512, 8, nil), testNode("n2", 64, 512, 8, nil)}, nil)
	h := s.Handler()
	names := []string{"n1", "n2"}
	filter := func(tok string, k int) extenderv1.ExtenderFilterResult {
		code, b := call(t, h, "POST", "/filter", extenderv1.ExtenderArgs{Pod: gangPod("ring", 2, k, 4), NodeNames: &names}, "Authorization", "Bearer "+tok)
		if code != http.StatusOK {
			t.Fatalf("filter: %d %s", code, b)
		}
		return decodeBody[extenderv1.ExtenderFilterResult](t, b)
	}
	if r := filter("r", 0); !strings.Contains(r.Error, "needs the write role") {
		t.Fatalf("read role planned a group: %+v", r)
	}
	if f := freeGPUs(s, names); !slices.Equal(f, []int64{8000, 8000}) {
		t.Errorf("free %v after a refused plan", f)
	}
	w := filter("w", 0)
	if w.Error != "" || len(*w.NodeNames) != 1 {
		t.Fatalf("write role: %+v", w)
	}
	if r := filter("r", 0); r.Error != "" || !slices.Equal(*r.NodeNames, *w.NodeNames) {
		t.Errorf("read role reading member 0's place: %+v, want %v", r, *w.NodeNames)
	}
	if r := filter("r", 1); !strings.Contains(r.Error, "needs the write role") {
		t.Errorf("read role joined a group: %+v", r)
	}
}

// TestGangFollowsAllocation is a gang's path through the service: the
// learned allocation policy (POST /v1/allocate) chooses each job's GPU
// type for the round, the job's pod group asks for that type
// (tegrl.io/gpu-models), and the extender places the whole group on
// nodes of that type, four one-GPU pods on one four-GPU node, each job's
// group on a node of its own.
func TestGangFollowsAllocation(t *testing.T) {
	s, err := New(Config{Seed: 1, AllocationPolicies: map[string]string{"gavel": gavelMulti}})
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	var nodes []*v1.Node
	for _, n := range []struct{ name, gpu, rack string }{{"v1", "v100", "r1"}, {"v2", "v100", "r1"}, {"k1", "k80", "r2"}, {"k2", "k80", "r2"}} {
		nodes = append(nodes, testNode(n.name, 32, 256, 4, map[string]string{LabelGPUModel: n.gpu, LabelRack: n.rack}))
		model[n.name] = n.gpu
	}
	s.SyncCluster(nodes, nil)
	h := s.Handler()
	code, b := call(t, h, "POST", "/v1/allocate", AllocateRequest{Policy: "gavel", TimeS: 3600,
		GPUs: []AllocateGPU{{"v100", 8}, {"k80", 8}},
		Jobs: []AllocateJob{
			{ID: 0, Model: "ResNet-18 (batch size 16)", Scale: 4, ArrivalS: 0, StepsTotal: 1e6, StepsLeft: 1e6},
			{ID: 1, Model: "Transformer (batch size 16)", Scale: 4, ArrivalS: 60, StepsTotal: 1e6, StepsLeft: 1e6},
		}})
	if code != http.StatusOK {
		t.Fatalf("allocate: %d %s", code, b)
	}
	resp := decodeBody[AllocateResponse](t, b)
	if len(resp.Allocation) != 2 || resp.SHA256 == "" {
		t.Fatalf("allocation %+v: want both jobs placed by the learned policy", resp)
	}
	names := []string{"v1", "v2", "k1", "k2"}
	used := map[string]bool{}
	for _, a := range resp.Allocation {
		group := "job" + strconv.Itoa(a.Job)
		var got []string
		for k := range 4 {
			p := gangPod(group, 4, k, 1)
			p.Annotations[annGPUModels] = a.Type
			pass, res := gangFilterPass(t, s, p, names)
			if len(pass) != 1 {
				t.Fatalf("%s member %d: pass %v, failed %v", group, k, pass, res.FailedNodes)
			}
			got = append(got, pass[0])
		}
		if model[got[0]] != a.Type || len(slices.Compact(slices.Clone(got))) != 1 || used[got[0]] {
			t.Errorf("job %d allocated %s: members on %v (one free %s node wanted)", a.Job, a.Type, got, a.Type)
		}
		used[got[0]] = true
		t.Logf("job %d: %s, members on %v", a.Job, a.Type, got)
	}
}
