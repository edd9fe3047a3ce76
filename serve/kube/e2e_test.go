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
	before := scrape(t, url)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, e2ePods)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < e2ePods; i += 4 {
				if _, err := c.CoreV1().Pods(e2eNS).Create(ctx, e2ePod(i), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("pod %d: %w", i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	created := time.Since(start)
	var lastBind time.Time
	waitFor(t, ctx, "every pod bound", func() string {
		pl, err := c.CoreV1().Pods(e2eNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		bound := 0
		for _, p := range pl.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		if bound < e2ePods {
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
	out := strings.Join(lines, "\n") + "\n"
	fmt.Print(out)
	if f := os.Getenv("TEGRL_E2E_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Error(err)
		}
	}
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
