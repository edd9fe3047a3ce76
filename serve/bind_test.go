package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// fakeBinder stands in for the API server: it binds the pods it holds,
// once each, with the UID as precondition.
type fakeBinder struct {
	mu    sync.Mutex
	pods  map[string]*v1.Pod
	bound map[string]string
}

func newFakeBinder() *fakeBinder {
	return &fakeBinder{pods: map[string]*v1.Pod{}, bound: map[string]string{}}
}

func (b *fakeBinder) add(p *v1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pods[podKey(p)] = p
}

func (b *fakeBinder) Bind(_ context.Context, ns, name string, uid types.UID, node string) (*v1.Pod, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := ns + "/" + name
	p, ok := b.pods[key]
	switch {
	case !ok:
		return nil, errors.New("pods " + key + " not found")
	case uid != "" && p.UID != uid:
		return nil, fmt.Errorf("precondition failed: UID %s, pod has %s", uid, p.UID)
	case b.bound[key] != "":
		return nil, fmt.Errorf("pod %s is already assigned to node %q", key, b.bound[key])
	}
	b.bound[key] = node
	return p, nil
}

// TestBindLearnsPlacements: kube-scheduler's prioritize-then-bind cycle
// for twelve pods makes the model run them. Without a bind verb the
// model's running jobs stayed at the two jobs posted by hand while
// kube-scheduler placed twelve pods, and the capacity they took stayed
// free in the model.
func TestBindLearnsPlacements(t *testing.T) {
	s := newTestService(t, Config{})
	h := s.Handler()
	c := s.model.live.Cluster()
	code, b := call(t, h, "POST", "/v1/state", StateRequest{Started: []StartedJSON{
		{Key: "hand/a", Machine: c.Machines[0].Name, Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}},
		{Key: "hand/b", Machine: c.Machines[1].Name, Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}},
	}})
	if code != http.StatusOK {
		t.Fatalf("state: %d %s", code, b)
	}
	fb := newFakeBinder()
	s.SetBinder(fb)
	all := make([]string, len(c.Machines))
	for i := range c.Machines {
		all[i] = c.Machines[i].Name
	}
	type placed struct {
		node     string
		cpu, mem int64
	}
	want := map[string]placed{}
	before := s.Cluster()
	for k := range 12 {
		gpus := int64(k % 3 / 2) // every third pod asks for a GPU
		p := testPod(fmt.Sprintf("p%02d", k), fmt.Sprintf("%dm", 500+250*k), fmt.Sprintf("%dMi", 1024*(1+k%4)), gpus, nil)
		p.UID = types.UID(fmt.Sprintf("uid-%02d", k))
		fb.add(p)
		code, b := call(t, h, "POST", "/prioritize", extenderv1.ExtenderArgs{Pod: p, NodeNames: &all})
		if code != http.StatusOK {
			t.Fatalf("prioritize %s: %d %s", p.Name, code, b)
		}
		best := extenderv1.HostPriority{Score: -1}
		for _, hp := range decodeBody[extenderv1.HostPriorityList](t, b) {
			if hp.Score > best.Score {
				best = hp
			}
		}
		code, b = call(t, h, "POST", "/bind", extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: p.Namespace, PodUID: p.UID, Node: best.Host})
		if res := decodeBody[extenderv1.ExtenderBindingResult](t, b); code != http.StatusOK || res.Error != "" {
			t.Fatalf("bind %s to %s: %d %s", p.Name, best.Host, code, b)
		}
		want[podKey(p)] = placed{best.Host, 500 + 250*int64(k), 1024 * (1 + int64(k%4))}
	}
	if got := testutil.ToFloat64(s.met.running); got != 14 {
		t.Errorf("tegrl_serve_running_jobs %v after 12 binds on 2 jobs posted by hand, want 14", got)
	}
	cl := s.Cluster()
	if cl.RunningJobs != 14 || len(cl.Jobs) != 14 {
		t.Fatalf("cluster view: %d running, %d jobs, want 14", cl.RunningJobs, len(cl.Jobs))
	}
	took := map[string][2]int64{}
	for _, j := range cl.Jobs {
		if w, ok := want[j.Key]; ok {
			if j.Machine != w.node {
				t.Errorf("pod %s runs on %s in the model, bound to %s", j.Key, j.Machine, w.node)
			}
			t := took[w.node]
			took[w.node] = [2]int64{t[0] + w.cpu, t[1] + w.mem}
		}
	}
	for i, m := range cl.Machines {
		d := [2]int64{before.Machines[i].FreeCPUMilli - m.FreeCPUMilli, before.Machines[i].FreeMemMiB - m.FreeMemMiB}
		if d != took[m.Name] {
			t.Errorf("machine %s: free cpu, memory fell by %v, the pods bound there take %v", m.Name, d, took[m.Name])
		}
	}

	// A second bind of a bound pod fails in the API server: the reason
	// comes back in a 200 answer and the model keeps one job.
	code, b = call(t, h, "POST", "/bind", extenderv1.ExtenderBindingArgs{PodName: "p00", PodNamespace: "team", PodUID: "uid-00", Node: all[5]})
	if res := decodeBody[extenderv1.ExtenderBindingResult](t, b); code != http.StatusOK || !strings.Contains(res.Error, "already assigned") {
		t.Errorf("second bind: %d %s", code, b)
	}
	for _, tc := range []struct {
		args extenderv1.ExtenderBindingArgs
		want string
	}{
		{extenderv1.ExtenderBindingArgs{PodNamespace: "team", Node: all[0]}, "PodName: empty"},
		{extenderv1.ExtenderBindingArgs{PodName: "p01", PodNamespace: "team"}, "Node: empty"},
		{extenderv1.ExtenderBindingArgs{PodName: "ghost", PodNamespace: "team", Node: all[0]}, "not found"},
		{extenderv1.ExtenderBindingArgs{PodName: "p01", PodNamespace: "team", PodUID: "other", Node: all[0]}, "precondition"},
	} {
		code, b := call(t, h, "POST", "/bind", tc.args)
		if res := decodeBody[extenderv1.ExtenderBindingResult](t, b); code != http.StatusOK || !strings.Contains(res.Error, tc.want) {
			t.Errorf("bind %+v: %d %s, want an error with %q", tc.args, code, b, tc.want)
		}
	}
	if code, b := call(t, h, "POST", "/bind", `{"PodName":`); code != http.StatusBadRequest {
		t.Errorf("truncated body: %d %s", code, b)
	}
	if got := s.Cluster().RunningJobs; got != 14 {
		t.Errorf("%d running jobs after refused binds, want 14", got)
	}
	if got := testutil.ToFloat64(s.kube.binds.WithLabelValues("bound")); got != 12 {
		t.Errorf("tegrl_serve_binds_total{result=bound} %v, want 12", got)
	}

	// Without an API server the bind verb says so.
	s2 := newTestService(t, Config{})
	code, b = call(t, s2.Handler(), "POST", "/bind", extenderv1.ExtenderBindingArgs{PodName: "x", PodNamespace: "team", Node: all[0]})
	if res := decodeBody[extenderv1.ExtenderBindingResult](t, b); code != http.StatusOK || !strings.Contains(res.Error, "no API server") {
		t.Errorf("bind without a binder: %d %s", code, b)
	}
}

// FuzzBindArgs: any body gets an answer (200 with or without a reason,
// 400 or 413), never a panic, and the model stays consistent.
func FuzzBindArgs(f *testing.F) {
	for _, seed := range []string{
		`{"PodName":"p","PodNamespace":"team","PodUID":"u","Node":"n"}`,
		`{"PodName":"p","Node":""}`, `{}`, `[]`, `{"PodName":1}`, `{"PodName":"p","Node":"n"} x`, "",
	} {
		f.Add(seed)
	}
	s := newTestService(f, Config{})
	fb := newFakeBinder()
	p := testPod("p", "1", "1Gi", 0, nil)
	p.UID = "u"
	fb.add(p)
	s.SetBinder(fb)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		code, b := call(t, h, "POST", "/bind", body)
		switch code {
		case http.StatusOK:
			decodeBody[extenderv1.ExtenderBindingResult](t, b)
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("body %q: %d %s", body, code, b)
		}
		if cl := s.Cluster(); cl.RunningJobs != len(cl.Jobs) || cl.RunningJobs > 1 {
			t.Fatalf("after %q: %d running, %d jobs", body, cl.RunningJobs, len(cl.Jobs))
		}
	})
}
