//go:build e2ekube

package kube

// The end-to-end check of scripts/e2e-kube.sh (make e2e-kube): a real
// kube-apiserver and kube-scheduler with tegrl serve as the scheduler's
// extender (filter, prioritize, bind) and its model kept by the
// informers. The script starts the control plane and tegrl and passes
// their addresses in the environment:
//
//	TEGRL_E2E_KUBECONFIG  kubeconfig of a cluster administrator
//	TEGRL_E2E_URL         tegrl serve's URL
//	TEGRL_E2E_OUT         file the figures are written to (optional)

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tegrl/tegrl/serve"
)

const (
	e2eNodes = 50
	e2ePods  = 200
	e2eNS    = "e2e"
)

// e2eNode is node i: every fifth node from the second has 8 GPUs (A100
// and H100 in turn, 20 of 50), the others are CPU-only.
func e2eNode(i int) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", i), Labels: map[string]string{}}}
	a := v1.ResourceList{v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: resource.MustParse("64Gi"),
		v1.ResourcePods: resource.MustParse("110")}
	if i%5 == 1 || i%5 == 3 {
		a[v1.ResourceCPU], a[v1.ResourceMemory] = resource.MustParse("64"), resource.MustParse("512Gi")
		a["nvidia.com/gpu"] = resource.MustParse("8")
		n.Labels[serve.LabelGPUModel] = []string{"A100", "H100"}[(i/5)%2]
	}
	n.Status = v1.NodeStatus{Capacity: a, Allocatable: a, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue,
		Reason: "e2e", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	return n
}

// e2ePod is pod i: 140 CPU pods of 0.5-4 cores and 1-8 GiB, 60 GPU pods
// of 1, 1, 2 or 4 GPUs (120 of the 160 GPUs).
func e2ePod(i int) *v1.Pod {
	req := v1.ResourceList{}
	if i%10 < 7 {
		req[v1.ResourceCPU] = resource.MustParse(fmt.Sprintf("%dm", 500+500*(i%8)))
		req[v1.ResourceMemory] = resource.MustParse(fmt.Sprintf("%dGi", 1+i%8))
	} else {
		g := []int{1, 1, 2, 4}[i%4]
		req[v1.ResourceCPU] = resource.MustParse(fmt.Sprintf("%d", 2*g))
		req[v1.ResourceMemory] = resource.MustParse(fmt.Sprintf("%dGi", 16*g))
		req["nvidia.com/gpu"] = *resource.NewQuantity(int64(g), resource.DecimalSI)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e2eNS, Name: fmt.Sprintf("pod-%03d", i)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "registry.invalid/none:0",
			Resources: v1.ResourceRequirements{Requests: req, Limits: req}}}}}
}

func TestE2EKube(t *testing.T) {
	kubeconfig, url := os.Getenv("TEGRL_E2E_KUBECONFIG"), os.Getenv("TEGRL_E2E_URL")
	if kubeconfig == "" || url == "" {
		t.Skip("TEGRL_E2E_KUBECONFIG and TEGRL_E2E_URL unset: run make e2e-kube")
	}
	rc, err := RESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 500, 1000
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	for i := range e2eNodes {
		if _, err := c.CoreV1().Nodes().Create(ctx, e2eNode(i), metav1.CreateOptions{}); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	waitFor(t, ctx, "tegrl's model has the 50 nodes", func() string {
		cl := tegrlCluster(t, url)
		if len(cl.Machines) != e2eNodes {
			return fmt.Sprintf("%d machines", len(cl.Machines))
		}
		return ""
	})
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e2eNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := make([]*v1.Pod, e2ePods)
	for i := range pods {
		pods[i] = e2ePod(i)
	}
	before := scrape(t, url)
	start := time.Now()
	createPods(t, ctx, c, pods)
	created := time.Since(start)
	var lastBind time.Time
	waitFor(t, ctx, "every pod bound", func() string {
		pl, err := c.CoreV1().Pods(e2eNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		if bound := countBound(pl.Items); bound < e2ePods {
			return fmt.Sprintf("%d of %d pods bound", bound, e2ePods)
		}
		lastBind = time.Now()
		return ""
	})
	took := lastBind.Sub(start)
	pl, err := c.CoreV1().Pods(e2eNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNoOvercommit(t, c, ctx, pl.Items)
	waitFor(t, ctx, "tegrl's running jobs equal the API's bound pods", func() string { return modelDiff(t, c, ctx, url) })
	after := scrape(t, url)
	var lines []string
	lines = append(lines, fmt.Sprintf("e2e-kube: %d pods on %d nodes bound in %.2f s (%.1f pods/s; creating them took %.2f s)",
		e2ePods, e2eNodes, took.Seconds(), e2ePods/took.Seconds(), created.Seconds()))
	for _, h := range []string{"filter", "prioritize", "bind"} {
		n, p50, p99 := quantiles(before, after, h)
		if n < e2ePods {
			t.Errorf("%s: %d calls for %d pods", h, n, e2ePods)
		}
		lines = append(lines, fmt.Sprintf("e2e-kube: extender %-10s %4d calls, p50 <= %.2f ms, p99 <= %.2f ms (bucket upper bounds of tegrl_serve_request_seconds)",
			h, n, 1e3*p50, 1e3*p99))
	}

	// Informers: delete a quarter of the pods, cordon one GPU node and
	// remove a CPU node; the model follows. No kubelet confirms a graceful
	// deletion here, so the pods are deleted at once (grace period 0), as
	// a kubelet's confirmation would end it.
	now := int64(0)
	for i := 0; i < e2ePods; i += 4 {
		if err := c.CoreV1().Pods(e2eNS).Delete(ctx, fmt.Sprintf("pod-%03d", i), metav1.DeleteOptions{GracePeriodSeconds: &now}); err != nil {
			t.Fatal(err)
		}
	}
	n1, err := c.CoreV1().Nodes().Get(ctx, "node-01", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1.Spec.Unschedulable = true
	if _, err := c.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Nodes().Delete(ctx, "node-00", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the model after deletes, a cordon and a removed node", func() string {
		if d := modelDiff(t, c, ctx, url); d != "" {
			return d
		}
		cl := tegrlCluster(t, url)
		for _, m := range cl.Machines {
			if m.Name == "node-01" && m.Schedulable {
				return "node-01 still schedulable in the model"
			}
		}
		if len(cl.Machines) != e2eNodes-1 {
			return fmt.Sprintf("%d machines", len(cl.Machines))
		}
		return ""
	})
	cl := tegrlCluster(t, url)
	if left := e2ePods - e2ePods/4; cl.RunningJobs+len(cl.Unplaced) != left {
		t.Errorf("after the deletes: %d running jobs and %d unplaced pods in the model, want %d in all", cl.RunningJobs, len(cl.Unplaced), left)
	}
	lines = append(lines, fmt.Sprintf("e2e-kube: after deleting 50 pods, cordoning node-01 and removing node-00: %d machines, %d running jobs, %d bound pods unplaced",
		len(cl.Machines), cl.RunningJobs, len(cl.Unplaced)))
	lines = append(lines, e2eGangs(t, ctx, c, url)...)
	out := strings.Join(lines, "\n") + "\n"
	fmt.Print(out)
	if f := os.Getenv("TEGRL_E2E_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// e2eGang is a pod group of the gang phase: size pods of gpus GPUs each,
// on one of models when it names any.
type e2eGang struct {
	name   string
	size   int
	gpus   int
	models string
}

// e2eGangPod is member k of group g.
func e2eGangPod(g e2eGang, k int) *v1.Pod {
	req := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(2*g.gpus), resource.DecimalSI),
		v1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 16*g.gpus)),
		"nvidia.com/gpu":  *resource.NewQuantity(int64(g.gpus), resource.DecimalSI),
	}
	ann := map[string]string{"tegrl.io/gang-size": fmt.Sprint(g.size)}
	if g.models != "" {
		ann["tegrl.io/gpu-models"] = g.models
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e2eNS, Name: fmt.Sprintf("%s-%02d", g.name, k),
		Labels: map[string]string{serve.LabelPodGroup: g.name}, Annotations: ann},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "registry.invalid/none:0",
			Resources: v1.ResourceRequirements{Requests: req, Limits: req}}}}}
}

// e2eGangs is the pod group phase. With the first phase's pods deleted, 19
// schedulable 8-GPU nodes (9 A100, 10 H100) take ten groups whose members
// arrive interleaved: six of 4 pods x 2 GPUs (one node each), three of 8
// pods x 2 GPUs (two nodes each) and one of 4 pods x 4 GPUs that asks for
// H100 (two H100 nodes), 112 of the 152 GPUs. Every member is bound, each
// group on one GPU model and on the fewest nodes that hold it. Then a
// group of 30 pods x 8 GPUs, which never fits at once, gets no pod bound
// and kube-scheduler reports tegrl's reason; deleting it leaves the model
// equal to the API, with no reservation left.
func e2eGangs(t *testing.T, ctx context.Context, c kubernetes.Interface, url string) []string {
	t.Helper()
	now := int64(0)
	if err := c.CoreV1().Pods(e2eNS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the first phase's pods gone from the model", func() string {
		if d := modelDiff(t, c, ctx, url); d != "" {
			return d
		}
		if cl := tegrlCluster(t, url); cl.RunningJobs != 0 {
			return fmt.Sprintf("%d running jobs", cl.RunningJobs)
		}
		return ""
	})
	gangs := []e2eGang{{"ring-a", 4, 2, ""}, {"ring-b", 4, 2, ""}, {"ring-c", 4, 2, ""}, {"ring-d", 4, 2, ""},
		{"ring-e", 4, 2, ""}, {"ring-f", 4, 2, ""}, {"wide-a", 8, 2, ""}, {"wide-b", 8, 2, ""}, {"wide-c", 8, 2, ""},
		{"fast", 4, 4, "H100"}}
	var pods []*v1.Pod
	for k := range 8 {
		for _, g := range gangs {
			if k < g.size {
				pods = append(pods, e2eGangPod(g, k))
			}
		}
	}
	before := scrape(t, url)
	start := time.Now()
	createPods(t, ctx, c, pods)
	var pl *v1.PodList
	waitFor(t, ctx, "every pod group member bound", func() string {
		var err error
		if pl, err = c.CoreV1().Pods(e2eNS).List(ctx, metav1.ListOptions{}); err != nil {
			return err.Error()
		}
		if bound := countBound(pl.Items); bound < len(pods) {
			return fmt.Sprintf("%d of %d members bound", bound, len(pods))
		}
		return ""
	})
	took := time.Since(start)
	checkNoOvercommit(t, c, ctx, pl.Items)
	nl, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	for _, n := range nl.Items {
		model[n.Name] = n.Labels[serve.LabelGPUModel]
	}
	nodes := map[string]map[string]bool{}
	for _, p := range pl.Items {
		g := p.Labels[serve.LabelPodGroup]
		if nodes[g] == nil {
			nodes[g] = map[string]bool{}
		}
		nodes[g][p.Spec.NodeName] = true
	}
	for _, g := range gangs {
		models := map[string]bool{}
		for n := range nodes[g.name] {
			models[model[n]] = true
		}
		if want := g.size * g.gpus / 8; len(models) != 1 || len(nodes[g.name]) != want {
			t.Errorf("group %s (%d pods x %d GPUs) on nodes %v of models %v, want %d nodes of one model", g.name, g.size, g.gpus, nodes[g.name], models, want)
		}
		if g.models != "" && !models[g.models] {
			t.Errorf("group %s asked for %s and runs on %v", g.name, g.models, models)
		}
	}
	waitFor(t, ctx, "tegrl's model equal to the API with every group bound", func() string { return modelDiff(t, c, ctx, url) })
	after := scrape(t, url)
	if n := counterDelta(before, after, "tegrl_serve_pod_group_events_total", "event", "planned"); n < float64(len(gangs)) {
		t.Errorf("%v plans made for %d groups", n, len(gangs))
	}
	lines := []string{fmt.Sprintf("e2e-kube: %d pod groups (%d pods, created interleaved) bound whole in %.2f s, each on one GPU model and the fewest nodes",
		len(gangs), len(pods), took.Seconds())}

	// All or nothing: 30 x 8 GPUs do not fit in the 40 GPUs left.
	big := e2eGang{"too-big", 30, 8, ""}
	before = after
	for k := range big.size {
		if _, err := c.CoreV1().Pods(e2eNS).Create(ctx, e2eGangPod(big, k), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sel := metav1.ListOptions{LabelSelector: serve.LabelPodGroup + "=" + big.name}
	reason := ""
	waitFor(t, ctx, "kube-scheduler reports the group does not fit", func() string {
		bl, err := c.CoreV1().Pods(e2eNS).List(ctx, sel)
		if err != nil {
			return err.Error()
		}
		for _, p := range bl.Items {
			if p.Spec.NodeName != "" {
				t.Fatalf("%s bound to %s: a group that does not fit at once got a member placed", p.Name, p.Spec.NodeName)
			}
			for _, cd := range p.Status.Conditions {
				if cd.Type == v1.PodScheduled && cd.Status == v1.ConditionFalse && strings.Contains(cd.Message, "do not fit at once") {
					reason = cd.Message
					return ""
				}
			}
		}
		return "no member's PodScheduled condition gives tegrl's reason yet"
	})
	// kube-scheduler keeps retrying; none of them may bind.
	time.Sleep(5 * time.Second)
	bl, err := c.CoreV1().Pods(e2eNS).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range bl.Items {
		if p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s: a group that does not fit at once got a member placed", p.Name, p.Spec.NodeName)
		}
	}
	if n := counterDelta(before, scrape(t, url), "tegrl_serve_pod_group_events_total", "event", "unfit"); n < 1 {
		t.Errorf("%v unfit plans counted for group %s", n, big.name)
	}
	if err := c.CoreV1().Pods(e2eNS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now}, sel); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the model after deleting the group that does not fit", func() string { return modelDiff(t, c, ctx, url) })
	if cl := tegrlCluster(t, url); cl.RunningJobs != len(pods) {
		t.Errorf("%d running jobs in the model, want the %d group members", cl.RunningJobs, len(pods))
	}
	return append(lines, fmt.Sprintf("e2e-kube: a group of %d pods x %d GPUs that does not fit: 0 bound; kube-scheduler says %q", big.size, big.gpus, reason))
}

// createPods creates pods with 4 writers, pod i by writer i mod 4.
func createPods(t *testing.T, ctx context.Context, c kubernetes.Interface, pods []*v1.Pod) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(pods); i += 4 {
				if _, err := c.CoreV1().Pods(pods[i].Namespace).Create(ctx, pods[i], metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("pod %s: %w", pods[i].Name, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// countBound counts the pods bound to a node.
func countBound(pods []v1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// counterDelta is the change of counter name's series whose label is
// value between two scrapes.
func counterDelta(before, after map[string]*dto.MetricFamily, name, label, value string) float64 {
	get := func(mf map[string]*dto.MetricFamily) float64 {
		f := mf[name]
		if f == nil {
			return 0
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	return get(after) - get(before)
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	why := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if why = cond(); why == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: still %s", what, why)
}

func tegrlCluster(t *testing.T, url string) serve.ClusterResponse {
	t.Helper()
	resp, err := http.Get(url + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cl serve.ClusterResponse
	if err := json.NewDecoder(resp.Body).Decode(&cl); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/cluster: %d %v", resp.StatusCode, err)
	}
	return cl
}

// modelDiff compares tegrl's running jobs with the API's bound pods on
// existing nodes ("" when equal) and checks tegrl's accounting.
func modelDiff(t *testing.T, c kubernetes.Interface, ctx context.Context, url string) string {
	t.Helper()
	nl, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	nodes := map[string]bool{}
	for _, n := range nl.Items {
		nodes[n.Name] = true
	}
	pl, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	api := map[string]string{}
	for _, p := range pl.Items {
		if p.Spec.NodeName != "" && nodes[p.Spec.NodeName] && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			api[p.Namespace+"/"+p.Name] = p.Spec.NodeName
		}
	}
	cl := tegrlCluster(t, url)
	for _, m := range cl.Machines {
		if m.FreeCPUMilli < 0 || m.FreeMemMiB < 0 || m.FreeGPUMilli < 0 || m.RequestedCPUMilli > m.CPUMilli || m.RequestedMemMiB > m.MemMiB ||
			m.RequestedGPUMilli > int64(m.GPUs)*1000 || m.FreeCPUMilli != m.CPUMilli-m.RequestedCPUMilli {
			t.Fatalf("tegrl over-commits machine %+v", m)
		}
	}
	var d []string
	model := map[string]string{}
	for _, j := range cl.Jobs {
		model[j.Key] = j.Machine
		if api[j.Key] != j.Machine {
			d = append(d, fmt.Sprintf("%s on %s in the model, %q in the api", j.Key, j.Machine, api[j.Key]))
		}
	}
	for k, n := range api {
		if model[k] == "" {
			d = append(d, fmt.Sprintf("%s bound to %s, not in the model", k, n))
		}
	}
	if cl.RunningJobs != len(api) {
		d = append(d, fmt.Sprintf("%d running jobs, %d bound pods", cl.RunningJobs, len(api)))
	}
	sort.Strings(d)
	if len(d) > 4 {
		d = append(d[:4], fmt.Sprintf("(%d differences)", len(d)))
	}
	return strings.Join(d, "; ")
}

// checkNoOvercommit checks the API's own accounting: the requests of the
// pods bound to each node fit its allocatable.
func checkNoOvercommit(t *testing.T, c kubernetes.Interface, ctx context.Context, pods []v1.Pod) {
	t.Helper()
	nl, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	use := map[string]v1.ResourceList{}
	for _, p := range pods {
		u := use[p.Spec.NodeName]
		if u == nil {
			u = v1.ResourceList{}
			use[p.Spec.NodeName] = u
		}
		for name, q := range p.Spec.Containers[0].Resources.Requests {
			s := u[name]
			s.Add(q)
			u[name] = s
		}
	}
	for _, n := range nl.Items {
		for name, q := range use[n.Name] {
			if a := n.Status.Allocatable[name]; q.Cmp(a) > 0 {
				t.Errorf("node %s: pods request %s %s, allocatable %s", n.Name, q.String(), name, a.String())
			}
		}
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

// quantiles returns handler's request count between two scrapes and the
// upper bounds of the buckets that hold its median and 99th percentile.
func quantiles(before, after map[string]*dto.MetricFamily, handler string) (int, float64, float64) {
	buckets := func(mf map[string]*dto.MetricFamily) ([]float64, []float64) {
		f := mf["tegrl_serve_request_seconds"]
		if f == nil {
			return nil, nil
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "handler" && l.GetValue() == handler {
					var ub, cum []float64
					for _, b := range m.Histogram.Bucket {
						ub = append(ub, b.GetUpperBound())
						cum = append(cum, float64(b.GetCumulativeCount()))
					}
					ub = append(ub, math.Inf(1))
					cum = append(cum, float64(m.Histogram.GetSampleCount()))
					return ub, cum
				}
			}
		}
		return nil, nil
	}
	ub, ca := buckets(after)
	_, cb := buckets(before)
	if ub == nil {
		return 0, math.NaN(), math.NaN()
	}
	d := make([]float64, len(ca))
	for i := range ca {
		d[i] = ca[i]
		if cb != nil {
			d[i] -= cb[i]
		}
	}
	n := d[len(d)-1]
	q := func(p float64) float64 {
		for i := range d {
			if d[i] >= p*n {
				return ub[i]
			}
		}
		return math.Inf(1)
	}
	return int(n), q(0.5), q(0.99)
}
