package serve

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// TestStateAndDecide: a cluster defined by a full state update, jobs
// started, time advanced; a decision names a machine that admits the job;
// a delta stops jobs and takes a machine down.
func TestStateAndDecide(t *testing.T) {
	s, err := New(Config{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	if code, b := call(t, h, "GET", "/readyz", nil); code != http.StatusServiceUnavailable || !strings.Contains(string(b), "no cluster") {
		t.Errorf("readyz without a cluster: %d %s", code, b)
	}
	if code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}}); code != http.StatusServiceUnavailable {
		t.Errorf("decide without a cluster: %d %s", code, b)
	}
	if code, b := call(t, h, "POST", "/v1/state", StateRequest{Stopped: []string{"x"}}); code != http.StatusConflict {
		t.Errorf("delta without a cluster: %d %s", code, b)
	}
	c := testCluster(t, 40)
	ms := machinesJSON(c)
	down := false
	ms[5].Up = &down
	req := StateRequest{TimeS: f64(0), Machines: ms, Started: []StartedJSON{
		{Key: "ns/a", Machine: ms[0].Name, Job: JobJSON{CPUMilli: 4000, MemMiB: 8192}, Usage: &UsageJSON{CPURatio: 0.5, MemRatio: 0.5}},
		{Key: "ns/b", Machine: ms[1].Name, Job: JobJSON{CPUMilli: 2000, MemMiB: 4096, Kind: "service", Service: "web"}},
		{Key: "ns/c", Machine: ms[5].Name, Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}}, // its machine is down
	}, Queue: &QueueJSON{Jobs: 3, CPUMilli: 6000, MeanWaitS: 12}}
	code, b := call(t, h, "POST", "/v1/state", req)
	if code != http.StatusOK {
		t.Fatalf("state: %d %s", code, b)
	}
	sr := decodeBody[StateResponse](t, b)
	if !sr.Rebuilt || sr.Machines != 40 || sr.MachinesUp != 39 || sr.RunningJobs != 2 || sr.Started != 2 || len(sr.Rejected) != 1 || sr.Rejected[0].Key != "ns/c" {
		t.Fatalf("state response %+v", sr)
	}
	if code, b := call(t, h, "GET", "/readyz", nil); code != http.StatusOK {
		t.Errorf("readyz: %d %s", code, b)
	}
	code, b = call(t, h, "POST", "/v1/state", StateRequest{TimeS: f64(95), Started: []StartedJSON{{Key: "ns/d", Machine: ms[2].Name, Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}}}})
	sr = decodeBody[StateResponse](t, b)
	if code != http.StatusOK || sr.Ticks != 9 || sr.ModelTimeS != 90 || sr.RunningJobs != 3 {
		t.Fatalf("delta: %d %+v", code, sr)
	}
	code, b = call(t, h, "POST", "/v1/decide", DecideRequest{Key: "ns/p", Job: JobJSON{CPUMilli: 2000, MemMiB: 4096, GPUs: 1, GPUMilli: 500, WaitS: 30}})
	if code != http.StatusOK {
		t.Fatalf("decide: %d %s", code, b)
	}
	dr := decodeBody[DecideResponse](t, b)
	if dr.Arm != "a" || dr.PolicyVersion != "langevin" || dr.Verdict != "placed" || dr.Action.Machine == nil || dr.ModelTimeS != 90 || len(dr.DecisionID) != 32 {
		t.Fatalf("decide response %s", b)
	}
	st := s.model.live.State()
	i := dr.Action.MachineIndex
	pj, _ := s.model.job(&JobJSON{CPUMilli: 2000, MemMiB: 4096, GPUs: 1, GPUMilli: 500}, "job", 0)
	rq := st.Request(&pj)
	if *dr.Action.Machine != c.Machines[i].Name || !st.Admit(i, &rq) {
		t.Errorf("decided machine %d (%s) does not admit the job", i, *dr.Action.Machine)
	}
	if dr.Action.Damping != nil || dr.Action.Affinity != float32(env.DefaultTEG.Affinity) {
		t.Errorf("langevin's knobs: damping %v, affinity %v", dr.Action.Damping, dr.Action.Affinity)
	}
	code, b = call(t, h, "POST", "/v1/state", StateRequest{Stopped: []string{"ns/a"}, MachineStatus: []MachineStatusJSON{{Name: ms[1].Name, Up: false}, {Name: ms[5].Name, Up: true}}})
	sr = decodeBody[StateResponse](t, b)
	if code != http.StatusOK || sr.Stopped != 2 || sr.RunningJobs != 1 || sr.MachinesUp != 39 {
		t.Fatalf("stop and machine down: %d %+v", code, sr)
	}
	if code, b := call(t, h, "POST", "/v1/state", StateRequest{Stopped: []string{"ns/b"}}); code != http.StatusBadRequest || !strings.Contains(string(b), `stopped[0]: unknown job \"ns/b\"`) {
		t.Errorf("stopping a job lost with its machine: %d %s", code, b)
	}
}

// TestRequestErrors: malformed and invalid requests get 4xx with a message
// that names the field, and change nothing.
func TestRequestErrors(t *testing.T) {
	s := newTestService(t, Config{MaxBodyBytes: 4096})
	h := s.Handler()
	call(t, h, "POST", "/v1/state", `{"started":[{"key":"run","machine":"m000001","job":{"cpu_milli":1000,"mem_mib":1000}}]}`)
	for _, tc := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1000,"mem_mib":10}`, 400, "malformed JSON"},
		{"/v1/decide", ``, 400, "empty body"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1}} {}`, 400, "trailing data"},
		{"/v1/decide", `{"key":"k","job":{"cpu":1}}`, 400, `unknown field "cpu"`},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":-1,"mem_mib":1}}`, 400, "job.cpu_milli: -1 must be >= 0"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":"NaN","mem_mib":1}}`, 400, "field job.cpu_milli"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1,"duration_s":1e999}}`, 400, "field job.duration_s"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1,"duration_s":-5}}`, 400, "job.duration_s: -5"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1,"gpu_milli":500}}`, 400, "job.gpu_milli: 500 without gpus"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1,"gpus":2,"gpu_milli":500}}`, 400, "job.gpu_milli"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1,"kind":"cron"}}`, 400, "job.kind"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1,"qos":"gold"}}`, 400, "job.qos"},
		{"/v1/decide", `{"job":{"cpu_milli":1,"mem_mib":1}}`, 400, "key: empty"},
		{"/v1/decide", `{"key":"k","job":{"cpu_milli":1,"mem_mib":1,"name":"` + strings.Repeat("x", 5000) + `"}}`, 413, "larger than the limit"},
		{"/v1/state", `{"time_s":-1}`, 400, "time_s: -1"},
		{"/v1/state", `{"machine_status":[{"name":"nope","up":false}]}`, 400, `machine_status[0].name: unknown machine "nope"`},
		{"/v1/state", `{"started":[{"key":"x","machine":"nope","job":{"cpu_milli":1,"mem_mib":1}}]}`, 400, `started[0].machine: unknown machine "nope"`},
		{"/v1/state", `{"started":[{"key":"x","machine":"m000001","job":{"cpu_milli":1,"mem_mib":-1}}]}`, 400, "started[0].job.mem_mib: -1"},
		{"/v1/state", `{"started":[{"key":"run","machine":"m000001","job":{"cpu_milli":1,"mem_mib":1}}]}`, 400, `started[0].key: job "run" already runs`},
		{"/v1/state", `{"started":[{"key":"x","machine":"m000001","job":{}},{"key":"x","machine":"m000001","job":{}}]}`, 400, `started[1].key: job "x" listed twice`},
		{"/v1/state", `{"started":[{"key":"x","machine":"m000001","gpu":99,"job":{}}]}`, 400, "started[0].gpu: 99"},
		{"/v1/state", `{"stopped":["ghost"]}`, 400, `stopped[0]: unknown job "ghost"`},
		{"/v1/state", `{"usage":[{"key":"run","cpu_ratio":-0.5,"mem_ratio":0}]}`, 400, "usage[0].cpu_ratio: -0.5"},
		{"/v1/state", `{"usage":[{"key":"ghost","cpu_ratio":0.5,"mem_ratio":0}]}`, 400, `usage[0].key: unknown job "ghost"`},
		{"/v1/state", `{"queue":{"jobs":-2}}`, 400, "queue.jobs: -2"},
		{"/v1/state", `{"machines":[{"name":"a","cpu_milli":0,"mem_mib":1}]}`, 400, "machines[0].cpu_milli: 0 must be > 0"},
		{"/v1/state", `{"machines":[{"name":"a","cpu_milli":1,"mem_mib":1,"gpus":2}]}`, 400, "machines[0].gpu_model: empty with 2 GPUs"},
		{"/v1/state", `{"machines":[{"name":"a","cpu_milli":1,"mem_mib":1},{"name":"a","cpu_milli":1,"mem_mib":1}]}`, 400, `machines[1].name: "a" already names machines[0]`},
		{"/v1/state", `{"machines":[{"name":"a","cpu_milli":1,"mem_mib":1}],"stopped":["run"]}`, 400, "stopped: not allowed with machines"},
		{"/v1/outcome", `{"decision_id":"x-1","reward":1}`, 400, `decision_id: "x-1": not a decision id of this service`},
		{"/v1/outcome", `{"decision_id":"x-1"}`, 400, "no measurement"},
		{"/v1/outcome", `{"decision_id":"00000000000000000000000000000999","reward":1}`, 400, "unknown decision"},
		{"/v1/outcome", `{"decision_id":"00000000000000000000000000000001","jct_s":-3}`, 400, "jct_s: -3"},
	} {
		code, b := call(t, h, "POST", tc.path, tc.body)
		if msg := decodeBody[apiError](t, b).Error; code != tc.code || !strings.Contains(msg, tc.want) {
			t.Errorf("POST %s %.80s: %d %s, want %d with %q", tc.path, tc.body, code, b, tc.code, tc.want)
		}
	}
	if code, _ := call(t, h, "GET", "/v1/decide", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/decide: %d, want 405", code)
	}
	if n := s.model.live.Running(); n != 1 {
		t.Errorf("bad requests changed the model: %d running jobs, want 1", n)
	}
}

// TestDecideDeterministic: the same seed and requests give the same bytes,
// but for the decision ids, which are random (and must differ).
func TestDecideDeterministic(t *testing.T) {
	ids := map[string]bool{}
	run := func() []byte {
		s := newTestService(t, Config{Seed: 5, Arms: []ArmConfig{{Name: "a", Spec: "langevin", Weight: 1}, {Name: "b", Spec: "p2c", Weight: 1}}})
		h := s.Handler()
		var out bytes.Buffer
		for k := 0; k < 40; k++ {
			key := "ns/pod-" + string(rune('a'+k%26)) + string(rune('a'+k/26))
			code, b := call(t, h, "POST", "/v1/decide", DecideRequest{Key: key, Job: JobJSON{CPUMilli: int64(500 + 250*k), MemMiB: 2048, GPUs: k % 3, WaitS: float64(k)}})
			if code != http.StatusOK {
				t.Fatalf("decide: %d %s", code, b)
			}
			d := decodeBody[DecideResponse](t, b)
			if ids[d.DecisionID] {
				t.Fatalf("decision id %s issued twice", d.DecisionID)
			}
			ids[d.DecisionID] = true
			out.Write(bytes.Replace(b, []byte(d.DecisionID), []byte("ID"), 1))
			if d.Action.Machine != nil {
				call(t, h, "POST", "/v1/state", StateRequest{TimeS: f64(float64(10 * k)), Started: []StartedJSON{{Key: key, Machine: *d.Action.Machine, Job: JobJSON{CPUMilli: int64(500 + 250*k), MemMiB: 2048, GPUs: k % 3}}}})
			}
		}
		return out.Bytes()
	}
	a, b := run(), run()
	if !bytes.Equal(a, b) {
		t.Errorf("same seed and requests, different responses:\n%s\n%s", a, b)
	}
}

// TestMetricsAndHealth: the metrics endpoint serves the service's series.
func TestMetricsAndHealth(t *testing.T) {
	s := newTestService(t, Config{})
	h := s.Handler()
	call(t, h, "POST", "/v1/decide", DecideRequest{Key: "k", Job: JobJSON{CPUMilli: 1000, MemMiB: 1024}})
	code, b := call(t, h, "GET", "/metrics", nil)
	if code != http.StatusOK {
		t.Fatalf("metrics: %d", code)
	}
	for _, want := range []string{
		`tegrl_serve_decisions_total{arm="a",endpoint="decide",verdict="placed"} 1`,
		`tegrl_serve_decision_seconds_count{arm="a"} 1`,
		`tegrl_serve_policy_info{arm="a",source="builtin",version="langevin"} 1`,
		`tegrl_serve_requests_total{code="200",handler="decide"} 1`,
		`tegrl_serve_machines 64`,
		`tegrl_serve_ready 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if code, b := call(t, h, "GET", "/healthz", nil); code != http.StatusOK || string(b) != "ok\n" {
		t.Errorf("healthz: %d %q", code, b)
	}
}
