package serve

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// testNode is a node with allocatable cpu (cores), memory (GiB) and GPUs.
func testNode(name string, cpu, memGiB, gpus int64, labels map[string]string) *v1.Node {
	a := v1.ResourceList{v1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(memGiB<<30, resource.BinarySI)}
	if gpus > 0 {
		a[resourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: v1.NodeStatus{Allocatable: a}}
}

// boundPod is a pod of namespace team bound to node.
func boundPod(name, node, cpu, mem string, gpus int64, ann map[string]string) *v1.Pod {
	p := testPod(name, cpu, mem, gpus, ann)
	p.UID = types.UID("uid-" + name)
	p.Spec.NodeName = node
	return p
}

// newKubeService is a service with no cluster: the cluster sync defines it.
func newKubeService(t testing.TB) *Service {
	t.Helper()
	s, err := New(Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// freeOf returns machine name's free cpu, memory and GPU milli and its
// job count in the cluster view.
func freeOf(t *testing.T, cl ClusterResponse, name string) [4]int64 {
	t.Helper()
	for _, m := range cl.Machines {
		if m.Name == name {
			return [4]int64{m.FreeCPUMilli, m.FreeMemMiB, m.FreeGPUMilli, int64(m.Jobs)}
		}
	}
	t.Fatalf("machine %s not in the model", name)
	return [4]int64{}
}

func TestNodeMachine(t *testing.T) {
	n := testNode("g", 32, 128, 4, map[string]string{LabelGPUProduct: "NVIDIA-A100-SXM4-80GB", LabelRack: "r7"})
	n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("31500m")
	n.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("1000Mi")
	n.Status.Allocatable[v1.ResourceMemory] = *resource.NewQuantity(1000<<20+(1<<20-1), resource.BinarySI) // 1000 MiB and change
	sp, open, err := NodeMachine(n)
	if err != nil || !open || sp.Name != "g" || sp.CPU != 31500 || sp.Mem != 1000 || sp.GPUs != 4 || sp.GPUModel != "NVIDIA-A100-SXM4-80GB" || sp.Rack != "r7" {
		t.Errorf("gpu node: %+v open %v err %v", sp, open, err)
	}
	n.Labels[LabelGPUModel] = "A100"
	if sp, _, _ := NodeMachine(n); sp.GPUModel != "A100" {
		t.Errorf("%s does not take precedence: %q", LabelGPUModel, sp.GPUModel)
	}
	if sp, _, _ := NodeMachine(testNode("g", 8, 8, 2, nil)); sp.GPUModel != UnknownGPUModel {
		t.Errorf("unlabelled GPU node: model %q", sp.GPUModel)
	}
	if sp, _, _ := NodeMachine(testNode("c", 8, 8, 0, map[string]string{LabelGPUModel: "A100"})); sp.GPUModel != "" || sp.GPUs != 0 {
		t.Errorf("CPU node: %+v", sp)
	}
	cordoned := testNode("c", 8, 8, 0, nil)
	cordoned.Spec.Unschedulable = true
	notReady := testNode("c", 8, 8, 0, nil)
	notReady.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}}
	ready := testNode("c", 8, 8, 0, nil)
	ready.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue}, {Type: v1.NodeReady, Status: v1.ConditionTrue}}
	for _, tc := range []struct {
		n    *v1.Node
		open bool
	}{{cordoned, false}, {notReady, false}, {ready, true}} {
		if _, open, err := NodeMachine(tc.n); err != nil || open != tc.open {
			t.Errorf("node %+v: open %v (%v), want %v", tc.n.Spec, open, err, tc.open)
		}
	}
	for _, tc := range []struct {
		n    *v1.Node
		want string
	}{
		{testNode("", 8, 8, 0, nil), "without a name"},
		{testNode("z", 0, 8, 0, nil), "must be > 0"},
		{testNode("z", 8, 0, 0, nil), "must be > 0"},
		{testNode("z", 8, 8, 17, nil), "outside [0, 16]"},
	} {
		if _, _, err := NodeMachine(tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("node %q: %v, want %q", tc.n.Name, err, tc.want)
		}
	}
}

// TestClusterSyncEvents walks the live model through node and pod events
// with every free resource worked out by hand.
func TestClusterSyncEvents(t *testing.T) {
	s := newKubeService(t)
	if ok, _ := s.Ready(); ok {
		t.Fatal("ready without nodes")
	}
	s.UpsertNode(testNode("n-cpu", 8, 16, 0, nil))
	s.UpsertNode(testNode("n-gpu", 32, 128, 4, map[string]string{LabelGPUModel: "A100", LabelRack: "r1"}))
	s.UpsertNode(testNode("n-gpu2", 16, 64, 2, map[string]string{LabelGPUProduct: "Tesla-T4"}))
	if ok, why := s.Ready(); !ok {
		t.Fatalf("not ready with three nodes: %s", why)
	}
	cl := s.Cluster()
	if len(cl.Machines) != 3 || cl.Machines[0].Name != "n-cpu" || cl.Machines[1].GPUModel != "A100" || cl.Machines[2].GPUModel != "Tesla-T4" {
		t.Fatalf("machines %+v", cl.Machines)
	}
	s.UpsertPod(boundPod("a", "n-cpu", "2", "4Gi", 0, nil))
	s.UpsertPod(boundPod("b", "n-gpu", "4", "8Gi", 2, nil))
	s.UpsertPod(boundPod("c", "", "1", "1Gi", 0, nil)) // pending: not a job
	s.UpsertPod(boundPod("d", "n-late", "1", "1Gi", 0, nil))
	cl = s.Cluster()
	if cl.RunningJobs != 2 || freeOf(t, cl, "n-cpu") != [4]int64{6000, 12288, 0, 1} || freeOf(t, cl, "n-gpu") != [4]int64{28000, 122880, 2000, 1} {
		t.Fatalf("after two pods: %d running, n-cpu %v, n-gpu %v", cl.RunningJobs, freeOf(t, cl, "n-cpu"), freeOf(t, cl, "n-gpu"))
	}
	if len(cl.Unplaced) != 1 || cl.Unplaced[0].Key != "team/d" || !strings.Contains(cl.Unplaced[0].Error, "not a machine of the model") {
		t.Errorf("unplaced %+v", cl.Unplaced)
	}
	if got := testutil.ToFloat64(s.kube.unplaced); got != 1 {
		t.Errorf("tegrl_serve_kube_pods_unplaced %v, want 1", got)
	}

	// A new node rebuilds the model: every pod runs again, d on it.
	rebuilds := cl.Rebuilds
	s.UpsertNode(testNode("n-late", 4, 8, 0, nil))
	cl = s.Cluster()
	if cl.Rebuilds != rebuilds+1 || cl.RunningJobs != 3 || len(cl.Unplaced) != 0 || freeOf(t, cl, "n-late") != [4]int64{3000, 7168, 0, 1} ||
		freeOf(t, cl, "n-cpu") != [4]int64{6000, 12288, 0, 1} || freeOf(t, cl, "n-gpu") != [4]int64{28000, 122880, 2000, 1} {
		t.Fatalf("after n-late: %+v", cl)
	}

	// Cordoning keeps the node and its pods, without a rebuild; the
	// filter fails it for new pods.
	cordoned := testNode("n-cpu", 8, 16, 0, nil)
	cordoned.Spec.Unschedulable = true
	s.UpsertNode(cordoned)
	cl = s.Cluster()
	if cl.Rebuilds != rebuilds+1 || cl.RunningJobs != 3 || cl.Machines[0].Schedulable || !cl.Machines[1].Schedulable {
		t.Fatalf("after cordon: %+v", cl)
	}
	names := []string{"n-cpu", "n-gpu"}
	code, b := call(t, s.Handler(), "POST", "/filter", extenderv1.ExtenderArgs{Pod: testPod("new", "1", "1Gi", 0, nil), NodeNames: &names})
	fr := decodeBody[extenderv1.ExtenderFilterResult](t, b)
	if code != http.StatusOK || fr.NodeNames == nil || !slices.Equal(*fr.NodeNames, []string{"n-gpu"}) || !strings.Contains(fr.FailedNodes["n-cpu"], "cordoned") {
		t.Errorf("filter with n-cpu cordoned: %d %s", code, b)
	}

	// A pod that succeeded frees its node; a deleted one too, and a late
	// event for it (a bind answered after the delete) is ignored.
	done := boundPod("a", "n-cpu", "2", "4Gi", 0, nil)
	done.Status.Phase = v1.PodSucceeded
	s.UpsertPod(done)
	pb := boundPod("b", "n-gpu", "4", "8Gi", 2, nil)
	s.RemovePod(pb)
	s.UpsertPod(pb)
	cl = s.Cluster()
	if cl.RunningJobs != 1 || freeOf(t, cl, "n-cpu") != [4]int64{8000, 16384, 0, 0} || freeOf(t, cl, "n-gpu") != [4]int64{32000, 131072, 4000, 0} {
		t.Fatalf("after a succeeded and b deleted: %+v", cl)
	}
	// A pod recreated under the same name is a new pod.
	pb2 := boundPod("b", "n-gpu", "1", "1Gi", 1, nil)
	pb2.UID = "uid-b2"
	s.UpsertPod(pb2)
	if f := freeOf(t, s.Cluster(), "n-gpu"); f != [4]int64{31000, 130048, 3000, 1} {
		t.Errorf("recreated b: n-gpu %v", f)
	}

	// A removed node takes its pods out of the model; they wait, unplaced.
	s.RemoveNode("n-late")
	cl = s.Cluster()
	if len(cl.Machines) != 3 || cl.RunningJobs != 1 || len(cl.Unplaced) != 1 || cl.Unplaced[0].Key != "team/d" {
		t.Fatalf("after removing n-late: %+v", cl)
	}

	// Bad tegrl annotations: accounted by the requests; a pod larger than
	// its node (in the model's accounting): unplaced with the reason.
	s.UpsertPod(boundPod("e", "n-gpu2", "1", "1Gi", 0, map[string]string{annGPUMilli: "lots"}))
	s.UpsertPod(boundPod("f", "n-gpu2", "64", "1Gi", 0, nil))
	cl = s.Cluster()
	if cl.RunningJobs != 2 || freeOf(t, cl, "n-gpu2") != [4]int64{15000, 64512, 2000, 1} || len(cl.Unplaced) != 2 ||
		cl.Unplaced[1].Key != "team/f" || !strings.Contains(cl.Unplaced[1].Error, "does not fit") {
		t.Fatalf("after e and f: %+v", cl)
	}

	// A full /v1/state replaces the model behind the sync's back: the next
	// cluster event puts the cluster's machines back.
	code, b = call(t, s.Handler(), "POST", "/v1/state", StateRequest{Machines: []MachineJSON{{Name: "other", CPUMilli: 1000, MemMiB: 1000}}})
	if code != http.StatusOK {
		t.Fatalf("state: %d %s", code, b)
	}
	s.UpsertPod(boundPod("g", "n-cpu", "1", "1Gi", 0, nil))
	cl = s.Cluster()
	if len(cl.Machines) != 3 || cl.RunningJobs != 3 || freeOf(t, cl, "n-cpu") != [4]int64{7000, 15360, 0, 1} {
		t.Fatalf("after the model was replaced: %+v", cl)
	}

	// No nodes left: every machine down, nothing runs, nothing panics.
	for _, n := range []string{"n-cpu", "n-gpu", "n-gpu2"} {
		s.RemoveNode(n)
	}
	cl = s.Cluster()
	if cl.RunningJobs != 0 || len(cl.Unplaced) != 5 {
		t.Fatalf("without nodes: %+v", cl)
	}
	for _, m := range cl.Machines {
		if m.Up {
			t.Errorf("machine %s up without nodes", m.Name)
		}
	}
	code, b = call(t, s.Handler(), "POST", "/filter", extenderv1.ExtenderArgs{Pod: testPod("new", "1", "1Gi", 0, nil), NodeNames: &names})
	if code != http.StatusOK {
		t.Errorf("filter without nodes: %d %s", code, b)
	}
}

// randomCluster draws nodes and pods (some pending, finished, on unknown
// nodes or too large).
func randomCluster(rng *rand.Rand, nodes, pods int) ([]*v1.Node, []*v1.Pod) {
	var ns []*v1.Node
	for i := range nodes {
		g := int64(0)
		if rng.IntN(2) == 0 {
			g = int64(1 + rng.IntN(8))
		}
		ns = append(ns, testNode(fmt.Sprintf("n%02d", i), int64(4+rng.IntN(29)), int64(8+rng.IntN(121)), g, map[string]string{LabelGPUModel: "A100"}))
	}
	var ps []*v1.Pod
	for i := range pods {
		node := fmt.Sprintf("n%02d", rng.IntN(nodes+2)) // two names no node has
		if rng.IntN(8) == 0 {
			node = ""
		}
		p := boundPod(fmt.Sprintf("p%03d", i), node, fmt.Sprintf("%dm", 100+rng.IntN(4000)), fmt.Sprintf("%dMi", 64+rng.IntN(8192)), int64(rng.IntN(3)), nil)
		if rng.IntN(10) == 0 {
			p.Status.Phase = v1.PodSucceeded
		}
		ps = append(ps, p)
	}
	return ns, ps
}

// checkModel checks the model against what the sync recorded: every job
// is a recorded, active pod on its node; every recorded pod that is not a
// job says why; each machine's free resources are its capacity less the
// requests of its jobs, never below zero.
func checkModel(t *testing.T, s *Service, nodes map[string]*v1.Node, pods map[string]*v1.Pod) {
	t.Helper()
	cl := s.Cluster()
	inModel := map[string]bool{}
	for _, j := range cl.Jobs {
		p, ok := pods[j.Key]
		if !ok || !podActive(p) || p.Spec.NodeName != j.Machine || nodes[j.Machine] == nil {
			t.Fatalf("job %+v is no active pod on a node (pod %v)", j, ok)
		}
		inModel[j.Key] = true
	}
	unplaced := map[string]string{}
	for _, u := range cl.Unplaced {
		unplaced[u.Key] = u.Error
	}
	for key, p := range pods {
		if podActive(p) && !inModel[key] && unplaced[key] == "" {
			t.Fatalf("active pod %s on %s is neither a job nor unplaced with a reason", key, p.Spec.NodeName)
		}
		if _, ok := nodes[p.Spec.NodeName]; podActive(p) && !ok && inModel[key] {
			t.Fatalf("pod %s runs on a node the cluster lacks", key)
		}
	}
	if cl.RunningJobs != len(cl.Jobs) {
		t.Fatalf("%d running jobs, %d listed", cl.RunningJobs, len(cl.Jobs))
	}
	for _, m := range cl.Machines {
		if m.FreeCPUMilli < 0 || m.FreeMemMiB < 0 || m.FreeGPUMilli < 0 || m.FreeCPUMilli != m.CPUMilli-m.RequestedCPUMilli ||
			m.FreeMemMiB != m.MemMiB-m.RequestedMemMiB || m.FreeGPUMilli != int64(m.GPUs)*1000-m.RequestedGPUMilli {
			t.Fatalf("machine %+v: free is not capacity less requests", m)
		}
	}
}

// TestClusterSyncProperty applies random node and pod events and checks
// the model after each; a full sync of the final cluster then gives the
// same model as a fresh service synced with it, byte for byte.
func TestClusterSyncProperty(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 7))
		allNodes, allPods := randomCluster(rng, 8, 40)
		s := newKubeService(t)
		nodes, pods := map[string]*v1.Node{}, map[string]*v1.Pod{}
		for range rounds {
			switch r := rng.IntN(10); {
			case r < 2:
				n := allNodes[rng.IntN(len(allNodes))].DeepCopy()
				n.Spec.Unschedulable = rng.IntN(3) == 0
				nodes[n.Name] = n
				s.UpsertNode(n)
			case r < 3:
				n := allNodes[rng.IntN(len(allNodes))]
				delete(nodes, n.Name)
				s.RemoveNode(n.Name)
			case r < 8:
				p := allPods[rng.IntN(len(allPods))]
				pods[podKey(p)] = p
				s.UpsertPod(p)
			default:
				p := allPods[rng.IntN(len(allPods))]
				delete(pods, podKey(p))
				s.RemovePod(p)
				// A deleted pod comes back under a new UID.
				q := p.DeepCopy()
				q.UID += "x"
				allPods[slices.Index(allPods, p)] = q
			}
			checkModel(t, s, nodes, pods)
		}
		var nl []*v1.Node
		for _, n := range nodes {
			nl = append(nl, n)
		}
		var pl []*v1.Pod
		for _, p := range pods {
			pl = append(pl, p)
		}
		s.SyncCluster(nl, pl)
		checkModel(t, s, nodes, pods)
		fresh := newKubeService(t)
		rng.Shuffle(len(nl), func(i, j int) { nl[i], nl[j] = nl[j], nl[i] })
		rng.Shuffle(len(pl), func(i, j int) { pl[i], pl[j] = pl[j], pl[i] })
		fresh.SyncCluster(nl, pl)
		a, b := s.Cluster(), fresh.Cluster()
		a.Rebuilds, b.Rebuilds = 0, 0
		// A pod that does not fit says how full its node was when it was
		// tried, which depends on the order of events: compare the pods.
		for _, u := range [][]ClusterJob{a.Unplaced, b.Unplaced} {
			for i := range u {
				u[i].Error = ""
			}
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if len(nodes) > 0 && string(ja) != string(jb) {
			t.Errorf("seed %d: the synced model differs from a fresh sync of the same cluster:\n%s\n%s", seed, ja, jb)
		}
	}
}

// TestSyncClusterIncremental: a full sync that changes pods only starts
// and stops them (no rebuild); one that changes a node rebuilds.
func TestSyncClusterIncremental(t *testing.T) {
	s := newKubeService(t)
	nodes := []*v1.Node{testNode("a", 8, 16, 0, nil), testNode("b", 8, 16, 1, nil)}
	p1, p2 := boundPod("p1", "a", "1", "1Gi", 0, nil), boundPod("p2", "b", "2", "2Gi", 1, nil)
	s.SyncCluster(nodes, []*v1.Pod{p1})
	r0 := s.Cluster().Rebuilds
	s.SyncCluster(nodes, []*v1.Pod{p2})
	cl := s.Cluster()
	if cl.Rebuilds != r0 || cl.RunningJobs != 1 || cl.Jobs[0].Key != "team/p2" || freeOf(t, cl, "a") != [4]int64{8000, 16384, 0, 0} {
		t.Fatalf("pod-only sync: %+v", cl)
	}
	nodes[0] = testNode("a", 16, 16, 0, nil)
	s.SyncCluster(nodes, []*v1.Pod{p1, p2})
	cl = s.Cluster()
	if cl.Rebuilds != r0+1 || cl.RunningJobs != 2 || freeOf(t, cl, "a") != [4]int64{15000, 15360, 0, 1} {
		t.Fatalf("resized node: %+v", cl)
	}
	keys := []string{}
	for _, j := range cl.Jobs {
		keys = append(keys, j.Key)
	}
	if !sort.StringsAreSorted(keys) {
		t.Errorf("jobs not in key order: %v", keys)
	}
}
