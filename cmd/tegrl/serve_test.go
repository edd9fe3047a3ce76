package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServe runs tegrl serve end to end on the hand-made trace cluster:
// readiness, a decision, the extender's filter, metrics, then a clean
// shutdown on cancel.
func TestServe(t *testing.T) {
	nodes, _ := writeTrace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, done, errb := startListening(t, ctx, 20*time.Second, "serve", "--listen", "127.0.0.1:0", "--cluster", "alibaba-gpu:"+nodes, "--scheduler", "fgd",
		"--ab", "langevin", "--ab-share", "0.5", "--log-level", "warn")
	get := func(path string) (int, string) {
		r, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	post := func(path, body string) (int, string) {
		r, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, b := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz: %d %s", code, b)
	}
	code, b := post("/v1/decide", `{"key":"ns/p","job":{"cpu_milli":4000,"mem_mib":8192,"gpus":1,"gpu_milli":500}}`)
	var d struct {
		PolicyVersion string `json:"policy_version"`
		Action        struct {
			Machine *string `json:"machine"`
		} `json:"action"`
	}
	if err := json.Unmarshal([]byte(b), &d); code != http.StatusOK || err != nil || d.Action.Machine == nil {
		t.Fatalf("decide: %d %s", code, b)
	}
	if !strings.HasPrefix(*d.Action.Machine, "n") || (d.PolicyVersion != "fgd" && d.PolicyVersion != "langevin") {
		t.Errorf("decision %s", b)
	}
	code, b = post("/filter", `{"Pod":{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"4"}}}]}},"NodeNames":["n0","n1","n2","n3"]}`)
	if code != http.StatusOK || !strings.Contains(b, `"NodeNames":["n2"]`) {
		t.Errorf("filter: %d %s", code, b)
	}
	if code, b := get("/metrics"); code != http.StatusOK || !strings.Contains(b, `tegrl_serve_policy_info{arm="b",source="builtin",version="langevin"} 1`) {
		t.Errorf("metrics: %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after cancel: %v\nstderr: %s", err, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ab", "bestfit", "--ab-share", "1.5"}, "--ab-share"},
		{[]string{"--cluster", "nowhere:x"}, "--cluster"},
		{[]string{"--scheduler", "nope"}, "not built in"},
		{[]string{"--clock", "lunar"}, "clock"},
		{[]string{"--safety", "maybe"}, "--safety"},
		{[]string{"--machines", "0"}, "--machines"},
		{[]string{"--listen", "0.0.0.0:0"}, "not loopback"},
		{[]string{"--tls-cert", "x.crt"}, "--tls-key"},
		{[]string{"--client-ca", "ca.pem"}, "--client-ca"},
		{[]string{"--read-token-file", "/nonexistent/token"}, "--read-token-file"},
		{[]string{"--kubeconfig", "x.kubeconfig", "--kube-qps", "0"}, "--kube-qps"},
		{[]string{"--kubeconfig", "x.kubeconfig", "--kube-burst", "0"}, "--kube-burst"},
		{[]string{"--allocation-policy", "gavel"}, "--allocation-policy"},
		{[]string{"--allocation-policy", "=docs/policies/gavel-multi.json"}, "--allocation-policy"},
		{[]string{"--allocation-policy", "g=../../docs/policies/gavel-multi.json", "--allocation-policy", "g=../../docs/policies/gavel-single.json"}, "--allocation-policy"},
		{[]string{"--allocation-policy", "fifo=../../docs/policies/gavel-multi.json"}, "fifo=../../docs/policies/gavel-multi.json"},
		{[]string{"--allocation-policy", "oracle=../../docs/policies/gavel-multi-clairvoyant.json"}, "clairvoyant"},
	} {
		_, _, err := run(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--machines", "20", "--log-level", "warn"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestServeAllocationPolicy: --allocation-policy serves a learned policy
// through POST /v1/allocate and GET /v1/allocation-policies lists it.
func TestServeAllocationPolicy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, done, _ := startListening(t, ctx, 20*time.Second, "serve", "--listen", "127.0.0.1:0", "--cluster", "none", "--log-level", "warn",
		"--allocation-policy", "gavel=../../docs/policies/gavel-multi.json")
	r, err := http.Post(url+"/v1/allocate", "application/json", strings.NewReader(`{"policy":"gavel","time_s":3600,
		"gpus":[{"type":"v100","count":1},{"type":"k80","count":1}],
		"jobs":[{"id":1,"model":"ResNet-18 (batch size 16)","scale":1,"steps_total":1000,"steps_left":800,"attained_gpu_s":600,"prev_type":"k80"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	var resp struct {
		SHA256     string `json:"sha256"`
		Allocation []any  `json:"allocation"`
	}
	if err := json.Unmarshal(b, &resp); r.StatusCode != http.StatusOK || err != nil || len(resp.SHA256) != 64 || len(resp.Allocation) != 1 {
		t.Fatalf("allocate: %d %s", r.StatusCode, b)
	}
	r, err = http.Get(url + "/v1/allocation-policies")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || !strings.Contains(string(b), `"name":"gavel"`) || !strings.Contains(string(b), resp.SHA256) {
		t.Fatalf("allocation-policies: %d %s", r.StatusCode, b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after cancel: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}
