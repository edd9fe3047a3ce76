package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tegrl/tegrl/serve"
)

func node(name string, cpu, memGiB, gpus int64) *v1.Node {
	a := v1.ResourceList{v1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(memGiB<<30, resource.BinarySI)}
	lbl := map[string]string{}
	if gpus > 0 {
		a["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		lbl[serve.LabelGPUModel] = "A100"
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}, Status: v1.NodeStatus{Allocatable: a, Capacity: a}}
}

func pod(ns, name, nodeName, cpu, mem string, gpus int64) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	if gpus > 0 {
		req["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

// bindingReactor makes the fake API server bind as the real one does: the
// pod must exist with the binding's UID and no node yet.
func bindingReactor(c *fake.Clientset) {
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*v1.Binding)
		obj, err := c.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		switch {
		case b.UID != "" && b.UID != p.UID:
			return true, nil, apierrors.NewConflict(v1.Resource("pods"), b.Name, fmt.Errorf("UID precondition %s, pod has %s", b.UID, p.UID))
		case p.Spec.NodeName != "":
			return true, nil, apierrors.NewConflict(v1.Resource("pods"), b.Name, fmt.Errorf("pod %s is already assigned to node %q", b.Name, p.Spec.NodeName))
		}
		p.Spec.NodeName = b.Target.Name
		return true, b, c.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), p, b.Namespace)
	})
}

// start runs a Sync of a new service against the fake cluster until the
// test ends.
func start(t *testing.T, c *fake.Clientset, resync time.Duration) (*serve.Service, *Sync) {
	t.Helper()
	svc, err := serve.New(serve.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(svc, c, Options{Resync: resync})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	eventually(t, "the first sync", func() string {
		if !k.Synced() {
			return "not synced"
		}
		return ""
	})
	return svc, k
}

// eventually polls cond (an empty answer: met) for up to 10 s.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// truth lists the API's bound, active pods on existing nodes as
// key -> node.
func truth(t *testing.T, c *fake.Clientset) map[string]string {
	t.Helper()
	ctx := context.Background()
	nl, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, n := range nl.Items {
		nodes[n.Name] = true
	}
	pl, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pl.Items {
		if p.Spec.NodeName != "" && nodes[p.Spec.NodeName] && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			out[p.Namespace+"/"+p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// modelJobs lists the model's running jobs as key -> machine.
func modelJobs(svc *serve.Service) map[string]string {
	out := map[string]string{}
	for _, j := range svc.Cluster().Jobs {
		out[j.Key] = j.Machine
	}
	return out
}

func diff(model, api map[string]string) string {
	var d []string
	for k, n := range api {
		if model[k] != n {
			d = append(d, fmt.Sprintf("%s: api %s, model %q", k, n, model[k]))
		}
	}
	for k, n := range model {
		if _, ok := api[k]; !ok {
			d = append(d, fmt.Sprintf("%s: model %s, not bound in the api", k, n))
		}
	}
	sort.Strings(d)
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("... %d differences", len(d)))
	}
	return strings.Join(d, "; ")
}

// TestInformerEvents: the first list defines the model; pods bound by
// anyone become jobs; deleted and finished pods free their nodes; nodes
// added, cordoned, resized and removed follow.
func TestInformerEvents(t *testing.T) {
	c := fake.NewClientset(node("n1", 8, 16, 0), node("n2", 32, 128, 4),
		pod("a", "bound", "n1", "2", "4Gi", 0), pod("a", "pending", "", "1", "1Gi", 0))
	svc, _ := start(t, c, time.Hour)
	ctx := context.Background()
	cl := svc.Cluster()
	if len(cl.Machines) != 2 || cl.RunningJobs != 1 || cl.Jobs[0].Key != "a/bound" || cl.Machines[0].FreeCPUMilli != 6000 {
		t.Fatalf("after the first list: %+v", cl)
	}
	wait := func(what string) {
		t.Helper()
		eventually(t, what, func() string { return diff(modelJobs(svc), truth(t, c)) })
	}
	// Bound by someone else (spec.nodeName set directly).
	if _, err := c.CoreV1().Pods("b").Create(ctx, pod("b", "gpu", "n2", "4", "8Gi", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("pod created bound")
	if f := svc.Cluster().Machines[1]; f.FreeCPUMilli != 28000 || f.FullFreeGPUs != 2 {
		t.Errorf("n2 after the GPU pod: %+v", f)
	}
	// Finished pods free capacity.
	p, _ := c.CoreV1().Pods("a").Get(ctx, "bound", metav1.GetOptions{})
	p.Status.Phase = v1.PodSucceeded
	if _, err := c.CoreV1().Pods("a").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("pod succeeded")
	if f := svc.Cluster().Machines[0]; f.FreeCPUMilli != 8000 {
		t.Errorf("n1 after its pod succeeded: %+v", f)
	}
	// A new node; a pod on it.
	if _, err := c.CoreV1().Nodes().Create(ctx, node("n3", 4, 8, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("a").Create(ctx, pod("a", "late", "n3", "1", "1Gi", 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("node added")
	eventually(t, "three machines", func() string {
		if n := len(svc.Cluster().Machines); n != 3 {
			return fmt.Sprint(n, " machines")
		}
		return ""
	})
	// Cordoned: kept with its pods, closed to new ones.
	n2, _ := c.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	n2.Spec.Unschedulable = true
	if _, err := c.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cordon", func() string {
		if m := svc.Cluster().Machines[1]; m.Schedulable || m.Jobs != 1 {
			return fmt.Sprintf("%+v", m)
		}
		return ""
	})
	// Removed: its pods leave the model.
	if err := c.CoreV1().Nodes().Delete(ctx, "n3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("node removed")
	cl = svc.Cluster()
	if len(cl.Machines) != 2 || len(cl.Unplaced) != 1 || cl.Unplaced[0].Key != "a/late" {
		t.Errorf("after removing n3: %+v", cl)
	}
	// Deleted.
	if err := c.CoreV1().Pods("b").Delete(ctx, "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("pod deleted")
	if cl := svc.Cluster(); cl.RunningJobs != 0 || cl.Machines[1].FullFreeGPUs != 4 {
		t.Errorf("after deleting the GPU pod: %+v", cl)
	}
}

// TestBindThroughAPIServer: kube-scheduler's filter, prioritize and bind
// calls through the extender's HTTP API bind in the API server and the
// model runs the pod at once; the informer's update that follows leaves
// one job.
func TestBindThroughAPIServer(t *testing.T) {
	c := fake.NewClientset(node("n1", 8, 16, 0), node("n2", 8, 16, 0))
	bindingReactor(c)
	svc, _ := start(t, c, time.Hour)
	h := svc.Handler()
	post := func(path string, body any) []byte {
		t.Helper()
		js, _ := json.Marshal(body)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(js)))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.Bytes())
		}
		return rec.Body.Bytes()
	}
	ctx := context.Background()
	names := []string{"n1", "n2"}
	for i := range 10 {
		p := pod("a", fmt.Sprintf("p%d", i), "", "1500m", "2Gi", 0)
		if _, err := c.CoreV1().Pods("a").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var fr extenderv1.ExtenderFilterResult
		json.Unmarshal(post("/filter", extenderv1.ExtenderArgs{Pod: p, NodeNames: &names}), &fr)
		if fr.NodeNames == nil || len(*fr.NodeNames) == 0 {
			t.Fatalf("pod %d passes no node: %+v", i, fr)
		}
		var hp extenderv1.HostPriorityList
		json.Unmarshal(post("/prioritize", extenderv1.ExtenderArgs{Pod: p, NodeNames: fr.NodeNames}), &hp)
		best := hp[0]
		for _, x := range hp {
			if x.Score > best.Score {
				best = x
			}
		}
		var br extenderv1.ExtenderBindingResult
		json.Unmarshal(post("/bind", extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: "a", PodUID: p.UID, Node: best.Host}), &br)
		if br.Error != "" {
			t.Fatalf("bind %s: %s", p.Name, br.Error)
		}
		// The model has the pod before the informer sees the binding.
		if m := modelJobs(svc); m["a/"+p.Name] != best.Host {
			t.Fatalf("after binding %s to %s the model has %v", p.Name, best.Host, m)
		}
		got, _ := c.CoreV1().Pods("a").Get(ctx, p.Name, metav1.GetOptions{})
		if got.Spec.NodeName != best.Host {
			t.Fatalf("the API server has %s on %q", p.Name, got.Spec.NodeName)
		}
	}
	eventually(t, "informer after binds", func() string { return diff(modelJobs(svc), truth(t, c)) })
	// Two idle nodes of 8 cores and 16 GiB take 5 pods of 1.5 cores and
	// 2 GiB each, as kube-scheduler's fit check admits them.
	cl := svc.Cluster()
	if cl.RunningJobs != 10 {
		t.Errorf("%d running jobs, want 10", cl.RunningJobs)
	}
	for _, m := range cl.Machines {
		if m.FreeCPUMilli < 0 || m.FreeCPUMilli != m.CPUMilli-m.RequestedCPUMilli {
			t.Errorf("machine %+v over-committed", m)
		}
	}
	// An eleventh pod does not fit anywhere (0.5 cores left on each
	// node): the filter says so, for lack of free capacity.
	p := pod("a", "p10", "", "1500m", "2Gi", 0)
	var fr extenderv1.ExtenderFilterResult
	json.Unmarshal(post("/filter", extenderv1.ExtenderArgs{Pod: p, NodeNames: &names}), &fr)
	if fr.NodeNames == nil || len(*fr.NodeNames) != 0 {
		t.Errorf("an eleventh 1.5-core pod on two full 8-core nodes passes %v", fr.NodeNames)
	}
	for _, n := range names {
		if fr.FailedNodes[n] != "tegrl: insufficient free cpu, memory or GPU" {
			t.Errorf("eleventh pod on %s: failed with %q", n, fr.FailedNodes[n])
		}
	}
	// Binding a bound pod fails in the API server; the reason comes back.
	var br extenderv1.ExtenderBindingResult
	json.Unmarshal(post("/bind", extenderv1.ExtenderBindingArgs{PodName: "p0", PodNamespace: "a", PodUID: "uid-a-p0", Node: "n2"}), &br)
	if !strings.Contains(br.Error, "already assigned") {
		t.Errorf("second bind of p0: %q", br.Error)
	}
	json.Unmarshal(post("/bind", extenderv1.ExtenderBindingArgs{PodName: "ghost", PodNamespace: "a", Node: "n2"}), &br)
	if !strings.Contains(br.Error, "not found") {
		t.Errorf("bind of a missing pod: %q", br.Error)
	}
	if cl := svc.Cluster(); cl.RunningJobs != 10 {
		t.Errorf("%d running jobs after refused binds, want 10", cl.RunningJobs)
	}
}

// TestInformerRandomEvents: random creates, binds, updates and deletes of
// pods and nodes through the API; afterwards the model's running jobs
// equal the API's bound pods, and no machine is over-committed.
func TestInformerRandomEvents(t *testing.T) {
	ops := 400
	if testing.Short() {
		ops = 120
	}
	c := fake.NewClientset()
	bindingReactor(c)
	svc, _ := start(t, c, time.Hour)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range ops {
		name := fmt.Sprintf("p%02d", rng.IntN(60))
		nn := fmt.Sprintf("n%d", rng.IntN(6))
		var err error
		switch r := rng.IntN(20); {
		case r < 3:
			_, err = c.CoreV1().Nodes().Create(ctx, node(nn, int64(8+rng.IntN(25)), 64, int64(rng.IntN(3)*4)), metav1.CreateOptions{})
		case r < 4:
			err = c.CoreV1().Nodes().Delete(ctx, nn, metav1.DeleteOptions{})
		case r < 5:
			var n *v1.Node
			if n, err = c.CoreV1().Nodes().Get(ctx, nn, metav1.GetOptions{}); err == nil {
				n.Spec.Unschedulable = !n.Spec.Unschedulable
				_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			}
		case r < 11:
			target := ""
			if rng.IntN(2) == 0 {
				target = nn
			}
			// The API server gives every pod created a new UID; the fake
			// one keeps the UID sent, so each creation sends its own.
			p := pod("t", name, target, fmt.Sprintf("%dm", 100+rng.IntN(2000)), "1Gi", int64(rng.IntN(2)))
			p.UID = types.UID(fmt.Sprintf("uid-t-%s-%d", name, i))
			_, err = c.CoreV1().Pods("t").Create(ctx, p, metav1.CreateOptions{})
		case r < 15:
			err = c.CoreV1().Pods("t").Bind(ctx, &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name},
				Target: v1.ObjectReference{Kind: "Node", Name: nn}}, metav1.CreateOptions{})
		case r < 17:
			var p *v1.Pod
			if p, err = c.CoreV1().Pods("t").Get(ctx, name, metav1.GetOptions{}); err == nil {
				p.Status.Phase = v1.PodFailed
				_, err = c.CoreV1().Pods("t").UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
		default:
			err = c.CoreV1().Pods("t").Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	// Pods may be bound beyond what a node holds (spec.nodeName set at
	// creation skips every check): those are listed unplaced, not jobs.
	eventually(t, "model equals the API", func() string {
		m, api := modelJobs(svc), truth(t, c)
		cl := svc.Cluster()
		for _, u := range cl.Unplaced {
			if api[u.Key] != "" && strings.Contains(u.Error, "does not fit") {
				delete(api, u.Key)
			}
		}
		d := diff(m, api)
		if d != "" {
			d += fmt.Sprintf(" (unplaced: %+v)", cl.Unplaced)
		}
		return d
	})
	for _, m := range svc.Cluster().Machines {
		if m.FreeCPUMilli < 0 || m.FreeCPUMilli != m.CPUMilli-m.RequestedCPUMilli || m.FreeGPUMilli != int64(m.GPUs)*1000-m.RequestedGPUMilli {
			t.Errorf("machine %+v: free is not capacity less requests", m)
		}
	}
}

// TestFullSyncRepairs: a job the model holds that the cluster does not
// (a late bind, a missed delete) is gone after the next full sync.
func TestFullSyncRepairs(t *testing.T) {
	c := fake.NewClientset(node("n1", 8, 16, 0))
	svc, k := start(t, c, time.Hour)
	svc.UpsertPod(pod("x", "stray", "n1", "1", "1Gi", 0))
	if len(modelJobs(svc)) != 1 {
		t.Fatal("stray pod not recorded")
	}
	if err := k.FullSync(); err != nil {
		t.Fatal(err)
	}
	if d := diff(modelJobs(svc), truth(t, c)); d != "" {
		t.Errorf("after a full sync: %s", d)
	}
}
