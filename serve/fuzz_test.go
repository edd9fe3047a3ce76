package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// The fuzz targets feed arbitrary bodies to every decoder of outside input
// through the real handlers: no input may panic, answer 500, or answer
// anything but JSON.

// fuzzService serves a built-in and two learned policies (the committed
// GNN and its distilled student) on 300 machines, above the 256 where the
// learned policies observe sparsely.
func fuzzService(f *testing.F) *Service {
	f.Helper()
	c := testCluster(f, 300)
	s, err := New(Config{Cluster: c, Seed: 1, AdminToken: adminToken, MaxBodyBytes: 1 << 16,
		Arms: []ArmConfig{{Name: "a", Spec: "langevin", Weight: 1}, {Name: "b", Spec: committedPolicies[2], Weight: 1},
			{Name: "c", Spec: committedPolicies[1], Weight: 1}}})
	if err != nil {
		f.Fatal(err)
	}
	call(f, s.Handler(), "POST", "/v1/state", `{"started":[{"key":"run","machine":"m000001","job":{"cpu_milli":1000,"mem_mib":1000}}]}`)
	return s
}

func checkAnswer(t *testing.T, path string, code int, body []byte) {
	t.Helper()
	if code >= 500 && code != http.StatusServiceUnavailable {
		t.Fatalf("POST %s: %d %s", path, code, body)
	}
	if !json.Valid(body) {
		t.Fatalf("POST %s: %d, body is not JSON: %q", path, code, body)
	}
}

func FuzzDecodeState(f *testing.F) {
	for _, seed := range []string{
		`{"time_s":20,"started":[{"key":"x","machine":"m000002","job":{"cpu_milli":500,"mem_mib":512,"gpus":1,"gpu_milli":300}}],"usage":[{"key":"run","cpu_ratio":0.5,"mem_ratio":0.7}]}`,
		`{"stopped":["run"],"machine_status":[{"name":"m000003","up":false}],"queue":{"jobs":4,"cpu_milli":100,"gpu_milli":0,"mean_wait_s":3}}`,
		`{"machines":[{"name":"a","cpu_milli":8000,"mem_mib":16384,"gpus":2,"gpu_model":"T4","rack":"r"},{"name":"b","cpu_milli":4000,"mem_mib":8192,"up":false}],"started":[{"key":"k","machine":"a","job":{"cpu_milli":1000,"mem_mib":100}}]}`,
		`{"started":[{"key":"y","machine":"m000004","gpu":3,"job":{"kind":"training","gpus":4,"cpu_milli":1,"mem_mib":1,"duration_s":1e300}}]}`,
		`{"time_s":1e308}`, `[]`, `{"machines":[]}`, `null`,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzService(f)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, data []byte) {
		code, b := call(t, h, "POST", "/v1/state", data)
		checkAnswer(t, "/v1/state", code, b)
	})
}

func FuzzDecodeDecide(f *testing.F) {
	for _, seed := range []string{
		`{"key":"ns/p","job":{"cpu_milli":1000,"mem_mib":2048}}`,
		`{"key":"ns/q","job":{"name":"q","kind":"service","service":"web","qos":"LS","cpu_milli":1000,"mem_mib":2048,"gpus":1,"gpu_milli":250,"gpu_models":["T4"],"duration_s":60,"deadline_s":100,"latency_slo_s":5,"tenant":"t","migratable":true,"net_gbps":2,"wait_s":9}}`,
		`{"key":"k","job":{"gpus":8,"cpu_milli":1,"mem_mib":1}}`,
		`{"job":{"name":"n","cpu_milli":9223372036854775807,"mem_mib":9223372036854775807}}`,
		`{"key":"k","job":{"wait_s":1e308,"cpu_milli":1,"mem_mib":1}}`,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzService(f)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, data []byte) {
		code, b := call(t, h, "POST", "/v1/decide", data)
		checkAnswer(t, "/v1/decide", code, b)
	})
}

func FuzzDecodeOutcome(f *testing.F) {
	s := fuzzService(f)
	h := s.Handler()
	_, b := call(f, h, "POST", "/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1}}`)
	id := decodeBody[DecideResponse](f, b).DecisionID
	for _, seed := range []string{
		`{"decision_id":"` + id + `","reward":0.5,"success":true,"sla_violated":false,"jct_s":10,"wait_s":1}`,
		`{"decision_id":"` + id + `","reward":-1e308}`,
		`{"decision_id":"ffffffffffffffffffffffffffffffff","wait_s":1}`,
		`{"decision_id":"-","jct_s":0}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		code, b := call(t, h, "POST", "/v1/outcome", data)
		checkAnswer(t, "/v1/outcome", code, b)
	})
}

func FuzzExtenderArgs(f *testing.F) {
	for _, seed := range []string{
		`{"Pod":{"metadata":{"name":"p","namespace":"ns","annotations":{"tegrl.io/gpu-milli":"500","tegrl.io/kind":"service","tegrl.io/service":"s","tegrl.io/duration-s":"60","tegrl.io/gpu-models":"T4,A100","tegrl.io/qos":"LS"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m","memory":"1Gi","nvidia.com/gpu":"1"}}}],"initContainers":[{"name":"i","resources":{"requests":{"cpu":"2"}}}]},"status":{"qosClass":"Guaranteed"}},"NodeNames":["m000001","m000002","x"]}`,
		`{"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1Ei"}}}]}},"Nodes":{"items":[{"metadata":{"name":"m000003"}},{"metadata":{"name":"y"}}]}}`,
		`{"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"17"}}}]}},"NodeNames":[]}`,
		`{"Pod":{"metadata":{"name":"g0","namespace":"ns","labels":{"scheduling.x-k8s.io/pod-group":"ring"},"annotations":{"tegrl.io/gang-size":"3"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"}}}]}},"NodeNames":["m000001","m000002","m000003","x"]}`,
		`{"Pod":{"metadata":{"name":"g1","labels":{"scheduling.x-k8s.io/pod-group":"big"},"annotations":{"tegrl.io/gang-size":"1024"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"64"}}}]}},"NodeNames":["m000001"]}`,
		`{"Pod":{"metadata":{"name":"g2","labels":{"scheduling.x-k8s.io/pod-group":"bad"},"annotations":{"tegrl.io/gang-size":"0"}}},"NodeNames":["m000001"]}`,
		`{"Pod":null}`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzService(f)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, path := range []string{"/filter", "/prioritize"} {
			code, b := call(t, h, "POST", path, data)
			checkAnswer(t, path, code, b)
		}
	})
}

func FuzzPolicyCandidate(f *testing.F) {
	good := policyPayload(f, 1, nil)
	f.Add(good)
	f.Add(good[:64])
	f.Add(nanPolicyPayload(f))
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	s := fuzzService(f)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, data []byte) {
		code, b := call(t, h, "POST", "/v1/policies?arm=a", data, bearer(adminToken)...)
		checkAnswer(t, "/v1/policies", code, b)
		if code == http.StatusOK {
			// An accepted candidate must decide.
			code, b = call(t, h, "POST", "/v1/decide", `{"key":"fuzz","job":{"cpu_milli":100,"mem_mib":100}}`)
			checkAnswer(t, "/v1/decide", code, b)
		}
	})
}

// FuzzStateSequence applies a sequence of operations chosen by ops to the
// learned-policy service: full updates that resize the cluster (20, 270
// or 300 machines: shrinking and growing across the sparse threshold),
// the fuzzed body as a state delta, decisions and prioritize calls. No
// sequence may panic, answer 500 or leave the model inconsistent.
func FuzzStateSequence(f *testing.F) {
	f.Add([]byte{0, 2, 4, 2, 8, 2, 3}, []byte(`{"machine_status":[{"name":"m000001","up":false}]}`))
	f.Add([]byte{8, 2, 4, 2, 2, 3, 0, 1, 2}, []byte(`{"started":[{"key":"x","machine":"m000280","job":{"cpu_milli":1000,"mem_mib":1000}}]}`))
	f.Add([]byte{4, 1, 2, 0, 1, 3}, []byte(`{"time_s":1e9,"stopped":["x"]}`))
	s := fuzzService(f)
	h := s.Handler()
	sizes := []int{20, 270, 300}
	clusters := map[int][]MachineJSON{}
	for _, n := range sizes {
		clusters[n] = machinesJSON(testCluster(f, n))
	}
	f.Fuzz(func(t *testing.T, ops, body []byte) {
		if len(ops) > 16 {
			ops = ops[:16]
		}
		for k, op := range ops {
			switch op % 4 {
			case 0:
				code, b := call(t, h, "POST", "/v1/state", StateRequest{Machines: clusters[sizes[int(op/4)%len(sizes)]]})
				if code != http.StatusOK {
					t.Fatalf("full state: %d %s", code, b)
				}
			case 1:
				code, b := call(t, h, "POST", "/v1/state", body)
				checkAnswer(t, "/v1/state", code, b)
			case 2:
				code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: fmt.Sprint("k", k, op), Job: JobJSON{CPUMilli: 100 * int64(op), MemMiB: 100}})
				checkAnswer(t, "/v1/decide", code, b)
				if code != http.StatusOK {
					t.Fatalf("decide: %d %s", code, b)
				}
			case 3:
				names := []string{"m000001", "m000269", "m000299"}
				code, b := call(t, h, "POST", "/prioritize", extenderv1.ExtenderArgs{Pod: testPod(fmt.Sprint("p", op), "1", "1Gi", 0, nil), NodeNames: &names})
				checkAnswer(t, "/prioritize", code, b)
			}
		}
		checkBookkeeping(t, s)
	})
}
