package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tegrl/tegrl/env"
)

// benchCluster returns the cluster of a benchmark: the Alibaba GPU
// cluster (bundled) for 1523 machines, else synthetic.
func benchCluster(b testing.TB, n int) (*env.Cluster, string) {
	b.Helper()
	if n == 1523 {
		{
			spec, err := env.ParseClusterSpec("alibaba-gpu")
			if err != nil {
				b.Fatal(err)
			}
			c, err := spec.Load()
			if err != nil {
				b.Fatal(err)
			}
			return c, "alibaba-gpu"
		}
	}
	c, err := env.NewSyntheticCluster(n, 1)
	if err != nil {
		b.Fatal(err)
	}
	return c, "synthetic"
}

// loadedService is a service on c whose model runs jobs of a synthetic
// workload up to about 60% of the CPU, with a full load history, serving
// sched on arm a. With admin, it takes policies with adminToken, and a
// second arm b of weight 0 (no traffic) can take them when a serves a
// built-in.
func loadedService(b testing.TB, c *env.Cluster, sched string, admin bool) (*Service, []JobJSON) {
	b.Helper()
	cfg := Config{Cluster: c, Seed: 1, Arms: []ArmConfig{{Name: "a", Spec: sched, Weight: 1}}}
	if admin {
		cfg.AdminToken = adminToken
		cfg.Arms = append(cfg.Arms, ArmConfig{Name: "b", Spec: "langevin", Weight: 0})
	}
	if f, ok := benchPolicies[sched]; ok {
		cfg.Arms[0].Spec = f
	} else if sched == "policy" {
		dir := b.TempDir()
		path := dir + "/policy.safetensors"
		if err := os.WriteFile(path, defaultPolicyPayload(b, 1), 0o644); err != nil {
			b.Fatal(err)
		}
		cfg.Arms[0].Spec = path
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	wc := env.DefaultWorkload
	wc.Horizon = 3600
	w, err := env.NewSyntheticWorkload(c, wc, 2)
	if err != nil {
		b.Fatal(err)
	}
	l := s.model.live
	rng := rand.New(rand.NewPCG(3, 3))
	st := l.State()
	var shapes []JobJSON
	for k := range w.Jobs {
		j := w.Jobs[k]
		js := JobJSON{CPUMilli: j.CPU, MemMiB: j.Mem, GPUs: j.GPUs, GPUMilli: j.GPUMilli, Kind: j.Kind.String(), DurationS: &j.Duration}
		if len(shapes) < 64 {
			shapes = append(shapes, js)
			continue
		}
		if float64(st.UsedCPU) > 0.6*float64(st.CapCPU) {
			break
		}
		j.Arrival = 0
		req := st.Request(&j)
		for try := 0; try < 8; try++ {
			if i := rng.IntN(len(c.Machines)); st.Admit(i, &req) {
				l.Start(&j, i, -1)
				break
			}
		}
	}
	l.Advance(env.HistoryLen + 5)
	return s, shapes
}

// benchPolicies are the committed policy files BenchmarkDecide serves
// besides an untrained default-size policy: the GNN teacher (docs/rl.md)
// and the ReLU student distilled from it.
var benchPolicies = map[string]string{
	"teacher-gnn": "../docs/policies/small-gnn.safetensors",
	"student":     "../docs/policies/student-gnn.safetensors",
}

// percentiles reports p50 and p99 of the recorded durations in µs.
func percentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[min(len(d)-1, int(p*float64(len(d))))].Nanoseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkDecide: one decision for a pending job, in the process
// (Service.Decide: conversion, lock, scheduler, accounting) and over HTTP
// on loopback (JSON both ways, one keep-alive connection), on the
// 1,523-machine Alibaba GPU cluster and a 100,000-machine synthetic one,
// about 60% loaded, with the langevin governor, an untrained policy of the
// default size, and the committed GNN teacher and its distilled student.
// Run with -cpu 1 for the one-core figures.
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{1523, 100000} {
		c, src := benchCluster(b, n)
		for _, sched := range []string{"langevin", "policy", "teacher-gnn", "student"} {
			s, shapes := loadedService(b, c, sched, false)
			for _, path := range []string{"inproc", "http"} {
				b.Run(fmt.Sprintf("machines=%d/cluster=%s/sched=%s/path=%s", n, src, sched, path), func(b *testing.B) {
					lat := make([]time.Duration, 0, b.N)
					reqs := make([][]byte, len(shapes))
					for k := range shapes {
						reqs[k], _ = json.Marshal(DecideRequest{Key: fmt.Sprintf("ns/pod-%d", k), Job: shapes[k]})
					}
					var srv *httptest.Server
					client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
					if path == "http" {
						srv = httptest.NewServer(s.Handler())
						defer srv.Close()
					}
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						k := i % len(shapes)
						start := time.Now()
						if path == "inproc" {
							if _, err := s.Decide(&DecideRequest{Key: fmt.Sprintf("ns/pod-%d", k), Job: shapes[k]}); err != nil {
								b.Fatal(err)
							}
						} else {
							r, err := client.Post(srv.URL+"/v1/decide", "application/json", bytes.NewReader(reqs[k]))
							if err != nil {
								b.Fatal(err)
							}
							io.Copy(io.Discard, r.Body)
							r.Body.Close()
							if r.StatusCode != http.StatusOK {
								b.Fatalf("status %d", r.StatusCode)
							}
						}
						lat = append(lat, time.Since(start))
					}
					b.StopTimer()
					percentiles(b, lat)
				})
			}
		}
	}
}

// BenchmarkHotLoad: validating a policy file (checksum, decode, finite
// weights, schema, smoke decisions on the canary states) and swapping it
// in.
func BenchmarkHotLoad(b *testing.B) {
	s := newTestService(b, Config{})
	payloads := [][]byte{defaultPolicyPayload(b, 1), defaultPolicyPayload(b, 2)}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := s.Load("a", fmt.Sprintf("v%d", i), "admin", payloads[i%2], ""); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}

// TestLoadLoopback is the bounded loopback load test: G clients send N
// decisions in all (bounded in time too) to a real server on 127.0.0.1,
// while a policy file is hot-loaded every 50 ms (into the serving arm for
// "policy", the untrained default-size policy that the loaded files
// replace; for the other schedulers, the committed teacher and student
// included, into an arm without traffic, so that the validation competes
// for the CPU all the same); it reports
// throughput, latency percentiles and swap times, and requires every
// request to succeed. Long: skipped with -short.
func TestLoadLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	c, src := benchCluster(t, 1523)
	for _, sched := range []string{"langevin", "policy", "teacher-gnn", "student"} {
		s, shapes := loadedService(t, c, sched, true)
		url := serveBackground(t, s)
		const clients, total = 4, 20000
		limit := time.Now().Add(60 * time.Second)
		var (
			mu    sync.Mutex
			lat   []time.Duration
			fails []string
			wg    sync.WaitGroup
			next  int
		)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 10 * time.Second}
		stop := make(chan struct{})
		var swaps []time.Duration
		payloads := [][]byte{defaultPolicyPayload(t, 1), defaultPolicyPayload(t, 2)}
		swapDone := make(chan struct{})
		go func() {
			defer close(swapDone)
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				arm := "a"
				if sched != "policy" {
					arm = "b"
				}
				start := time.Now()
				req, _ := http.NewRequest("POST", url+"/v1/policies?name=load&arm="+arm, bytes.NewReader(payloads[k%2]))
				req.Header.Set("Authorization", "Bearer "+adminToken)
				r, err := client.Do(req)
				if err != nil || r.StatusCode != http.StatusOK {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("swap: %v %v", err, r))
					mu.Unlock()
					continue
				}
				r.Body.Close()
				swaps = append(swaps, time.Since(start))
			}
		}()
		start := time.Now()
		for g := 0; g < clients; g++ {
			wg.Go(func() {
				var mine []time.Duration
				for {
					mu.Lock()
					k := next
					next++
					mu.Unlock()
					if k >= total || time.Now().After(limit) {
						break
					}
					body, _ := json.Marshal(DecideRequest{Key: fmt.Sprintf("ns/pod-%d", k), Job: shapes[k%len(shapes)]})
					t0 := time.Now()
					r, err := client.Post(url+"/v1/decide", "application/json", bytes.NewReader(body))
					if err != nil {
						mu.Lock()
						fails = append(fails, err.Error())
						mu.Unlock()
						continue
					}
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
					mine = append(mine, time.Since(t0))
					if r.StatusCode != http.StatusOK {
						mu.Lock()
						fails = append(fails, fmt.Sprintf("status %d", r.StatusCode))
						mu.Unlock()
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(stop)
		<-swapDone
		if len(fails) > 0 {
			t.Errorf("%s: %d failed requests, first: %s", sched, len(fails), fails[0])
		}
		slices.Sort(lat)
		slices.Sort(swaps)
		q := func(d []time.Duration, p float64) time.Duration {
			if len(d) == 0 {
				return 0
			}
			return d[min(len(d)-1, int(p*float64(len(d))))]
		}
		t.Logf("%s on %d machines (%s), %d clients: %d decisions in %v = %.0f/s; latency p50 %v p99 %v; %d swaps p50 %v max %v",
			sched, len(c.Machines), src, clients, len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(),
			q(lat, 0.5), q(lat, 0.99), len(swaps), q(swaps, 0.5), q(swaps, 1))
	}
}

// BenchmarkAllocateTiered is BenchmarkAllocate for a round of 100
// single-GPU jobs of every job type on Gavel's 36:36:36 cluster, by the
// tiered tail file, its distilled student and max_min_fairness_packed:
// all answer pairs.
func BenchmarkAllocateTiered(b *testing.B) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		b.Fatal(err)
	}
	learned, err := newAllocPolicies(map[string]string{"tail": tailFile, "student": "../docs/policies/gavel-single-tiered-student.json"},
		nil, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	for _, pol := range []string{"tail", "student", "max_min_fairness_packed"} {
		req := AllocateRequest{Policy: pol, TimeS: 360000, GPUs: []AllocateGPU{{"v100", 36}, {"p100", 36}, {"k80", 36}}}
		for i := range 100 {
			req.Jobs = append(req.Jobs, AllocateJob{ID: i, Model: tab.Models[i%len(tab.Models)], Scale: 1, ArrivalS: float64(3600 * i),
				StepsTotal: 1e6, StepsLeft: 1e6 - float64(5000*(100-i)), AttainedGPUS: float64(3000 * (100 - i))})
		}
		b.Run("policy="+pol, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := allocate(tab, &req, learned); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
