package serve

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

func testPod(name string, cpu, mem string, gpus int64, ann map[string]string) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	if gpus > 0 {
		req[resourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Annotations: ann},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: req}}}},
	}
}

func TestPodJob(t *testing.T) {
	p := testPod("train", "1500m", "3Gi", 2, map[string]string{annKind: "training", annDuration: "7200", annGPUModels: "A100, V100M32"})
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("1Mi")}}})
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}}}}
	p.Status.QOSClass = v1.PodQOSGuaranteed
	js, err := podJob(p)
	if err != nil {
		t.Fatal(err)
	}
	if js.Name != "team/train" || js.Tenant != "team" || js.CPUMilli != 4000 || js.MemMiB != 3073 || js.GPUs != 2 || js.Kind != "training" ||
		js.QoS != "Guaranteed" || *js.DurationS != 7200 || !slices.Equal(js.GPUModels, []string{"A100", "V100M32"}) {
		t.Errorf("job %+v", js)
	}
	share, err := podJob(testPod("infer", "1", "1Gi", 0, map[string]string{annGPUMilli: "250", annService: "chat"}))
	if err != nil {
		t.Fatal(err)
	}
	if share.GPUs != 1 || share.GPUMilli != 250 || share.Kind != "service" || share.Service != "chat" || share.QoS != "Burstable" {
		t.Errorf("share job %+v", share)
	}
	for ann, want := range map[string]string{annGPUMilli: "gpu-milli", annDuration: "duration-s"} {
		if _, err := podJob(testPod("x", "1", "1Gi", 0, map[string]string{ann: "-3"})); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("annotation %s=-3: %v", ann, err)
		}
	}
}

// TestExtender: filter passes the nodes that admit the pod in the form it
// was asked in and fails the others with a reason (a node the model does
// not know among them); prioritize scores 0-10, the scheduler's machine
// 10; bad pods and bodies answer 200 with the reason inside (filter's
// Error; prioritize's X-Tegrl-Error header and zero scores), since
// kube-scheduler discards the body of any other status.
func TestExtender(t *testing.T) {
	s := newTestService(t, Config{})
	h := s.Handler()
	c := s.model.live.Cluster()
	gpu, cpuOnly := -1, -1
	for i := range c.Machines {
		if c.Machines[i].GPUs > 0 && gpu < 0 {
			gpu = i
		}
		if c.Machines[i].GPUs == 0 && cpuOnly < 0 {
			cpuOnly = i
		}
	}
	names := []string{c.Machines[gpu].Name, c.Machines[cpuOnly].Name, "not-in-model"}
	pod := testPod("gpu-job", "2", "4Gi", 1, nil)
	code, b := call(t, h, "POST", "/filter", extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
	if code != http.StatusOK {
		t.Fatalf("filter: %d %s", code, b)
	}
	fr := decodeBody[extenderv1.ExtenderFilterResult](t, b)
	if fr.NodeNames == nil || !slices.Equal(*fr.NodeNames, []string{names[0]}) || len(fr.FailedNodes) != 0 || fr.Nodes != nil ||
		fr.FailedAndUnresolvableNodes[names[1]] != reasonTooLarge || fr.FailedAndUnresolvableNodes[names[2]] != reasonUnknownNode {
		t.Errorf("filter by names: %s", b)
	}
	nodes := &v1.NodeList{}
	for _, n := range names {
		nodes.Items = append(nodes.Items, v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	code, b = call(t, h, "POST", "/filter", extenderv1.ExtenderArgs{Pod: pod, Nodes: nodes})
	fr = decodeBody[extenderv1.ExtenderFilterResult](t, b)
	if code != http.StatusOK || fr.Nodes == nil || len(fr.Nodes.Items) != 1 || fr.Nodes.Items[0].Name != names[0] || fr.NodeNames != nil {
		t.Errorf("filter by nodes: %d %s", code, b)
	}

	all := make([]string, len(c.Machines))
	for i := range c.Machines {
		all[i] = c.Machines[i].Name
	}
	all = append(all, "not-in-model")
	small := testPod("web", "500m", "512Mi", 0, nil)
	code, b = call(t, h, "POST", "/prioritize", extenderv1.ExtenderArgs{Pod: small, NodeNames: &all})
	if code != http.StatusOK {
		t.Fatalf("prioritize: %d %s", code, b)
	}
	hp := decodeBody[extenderv1.HostPriorityList](t, b)
	if len(hp) != len(all) {
		t.Fatalf("%d scores for %d nodes", len(hp), len(all))
	}
	tens := 0
	for k, p := range hp {
		if p.Host != all[k] || p.Score < extenderv1.MinExtenderPriority || p.Score > extenderv1.MaxExtenderPriority {
			t.Errorf("score %+v", p)
		}
		if p.Score == extenderv1.MaxExtenderPriority {
			tens++
		}
	}
	if tens != 1 || hp[len(hp)-1].Score != 0 {
		t.Errorf("%d nodes scored 10 (want the scheduler's one), unknown node scored %d", tens, hp[len(hp)-1].Score)
	}
	if st := s.router.summary(); st.Arms[0].Decisions != 1 {
		t.Errorf("prioritize not counted as a decision: %+v", st.Arms[0])
	}
	for _, tc := range []struct{ body, want string }{
		{`{"NodeNames":["a"]}`, "Pod: missing"},
		{`{"Pod":{"metadata":{"name":""}}}`, "Pod.metadata.name: empty"},
		{`{"Pod":{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"-1"}}}]}}}`, "negative cpu"},
		{`{"Pod":{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"lots"}}}]}}}`, "malformed JSON"},
		{`{"Pod":`, "malformed JSON"},
	} {
		code, b := call(t, h, "POST", "/filter", tc.body)
		if fr := decodeBody[extenderv1.ExtenderFilterResult](t, b); code != http.StatusOK || !strings.Contains(fr.Error, tc.want) || fr.NodeNames != nil {
			t.Errorf("/filter %s: %d %s, want 200 with Error %q", tc.body, code, b, tc.want)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/prioritize", strings.NewReader(tc.body)))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("X-Tegrl-Error"), tc.want) {
			t.Errorf("/prioritize %s: %d %q %s, want 200 with X-Tegrl-Error %q", tc.body, rec.Code, rec.Header().Get("X-Tegrl-Error"), rec.Body.Bytes(), tc.want)
		}
	}
	// A pod the model cannot take scores 0 on every node named.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/prioritize", strings.NewReader(`{"Pod":{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"-1"}}}]}},"NodeNames":["a","b"]}`)))
	if hp := decodeBody[extenderv1.HostPriorityList](t, rec.Body.Bytes()); len(hp) != 2 || hp[0] != (extenderv1.HostPriority{Host: "a"}) || hp[1] != (extenderv1.HostPriority{Host: "b"}) {
		t.Errorf("prioritize of a bad pod: %s", rec.Body.Bytes())
	}
	// Kubernetes objects carry fields tegrl does not read: accepted.
	code, b = call(t, h, "POST", "/filter", `{"Pod":{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"nodeSelector":{"k":"v"},"containers":[]},"status":{"phase":"Pending"}},"NodeNames":["`+all[0]+`"]}`)
	if code != http.StatusOK {
		t.Errorf("filter with fields tegrl ignores: %d %s", code, b)
	}
}
