package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tegrl/tegrl/env"
)

// LoadConfig configures RunLoad, a load test of a running service:
// decisions at a fixed rate from several clients while policy files are
// hot-loaded at a fixed interval.
type LoadConfig struct {
	// URL is the service's base URL (http://127.0.0.1:8080).
	URL string `flag:"url" usage:"base URL of the service to load (empty: start one in this process)"`
	// ReadToken and AdminToken authorise the decisions and the uploads
	// (empty: none sent).
	ReadToken, AdminToken string
	// Rate is the decisions per second asked for (open loop: a ticker
	// releases them; the report says what was achieved).
	Rate float64 `flag:"rate" default:"2000" usage:"decisions per second"`
	// Duration is how long decisions are sent.
	Duration time.Duration `flag:"duration" default:"20s" usage:"how long to send decisions"`
	// Clients is how many concurrent connections send them (default 8).
	Clients int `flag:"clients" default:"8" usage:"concurrent connections"`
	// HotLoadEvery is the interval between policy uploads (0: none), into
	// HotLoadArm (empty: the first arm), cycling through Policies.
	HotLoadEvery time.Duration `flag:"hot-load-every" default:"75ms" usage:"interval between policy uploads (0: none)"`
	HotLoadArm   string
	Policies     [][]byte
	// Jobs are the pending jobs' shapes, cycled through (default: one
	// 2-CPU, 4 GiB batch job).
	Jobs []JobJSON
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
}

// LoadReport is what RunLoad measured.
type LoadReport struct {
	// Decisions counts the decisions sent.
	Decisions int `json:"decisions"`
	// Failed counts decisions that got no 200 (transport errors included).
	Failed       int           `json:"failed"`
	FirstFailure string        `json:"first_failure,omitempty"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	// RatePerS is the decisions answered per second of Elapsed.
	RatePerS float64       `json:"rate_per_s"`
	P50      time.Duration `json:"p50_ns"`
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
	// HotLoads counts the uploads answered 200; HotLoadsFailed the others.
	HotLoads       int           `json:"hot_loads"`
	HotLoadsFailed int           `json:"hot_loads_failed"`
	HotLoadP50     time.Duration `json:"hot_load_p50_ns"`
	HotLoadMax     time.Duration `json:"hot_load_max_ns"`
}

// String is the report on one line.
func (r LoadReport) String() string {
	return fmt.Sprintf("%d decisions in %v = %.0f/s, %d failed; latency p50 %v p99 %v max %v; %d hot-loads (%d failed), p50 %v max %v",
		r.Decisions, r.Elapsed.Round(time.Millisecond), r.RatePerS, r.Failed, r.P50, r.P99, r.Max,
		r.HotLoads, r.HotLoadsFailed, r.HotLoadP50, r.HotLoadMax)
}

// RunLoad runs the load test until cfg.Duration passes or ctx ends.
func RunLoad(ctx context.Context, cfg LoadConfig) (LoadReport, error) {
	var rep LoadReport
	switch {
	case cfg.URL == "":
		return rep, fmt.Errorf("load: no URL")
	case !(cfg.Rate > 0) || cfg.Duration <= 0:
		return rep, fmt.Errorf("load: rate %v/s for %v: want both > 0", cfg.Rate, cfg.Duration)
	case cfg.HotLoadEvery > 0 && len(cfg.Policies) == 0:
		return rep, fmt.Errorf("load: hot-loads without policy files")
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if len(cfg.Jobs) == 0 {
		cfg.Jobs = []JobJSON{{CPUMilli: 2000, MemMiB: 4096}}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients + 1}, Timeout: cfg.Timeout}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	lg := &loadRun{cfg: cfg, client: client}
	var wg sync.WaitGroup
	if cfg.HotLoadEvery > 0 {
		wg.Go(func() { lg.hotLoads(ctx) })
	}
	tickets := make(chan int, cfg.Clients)
	for range cfg.Clients {
		wg.Go(func() { lg.decisions(tickets) })
	}
	start := time.Now()
	lg.pace(ctx, tickets, start)
	close(tickets)
	wg.Wait()
	rep = lg.report(time.Since(start))
	return rep, nil
}

type loadRun struct {
	cfg    LoadConfig
	client *http.Client

	mu       sync.Mutex
	sent     int
	lat      []time.Duration
	failed   int
	first    string
	swaps    []time.Duration
	swapFail int
}

// pace releases decision k at start + k/Rate, for k/Rate < Duration.
func (lg *loadRun) pace(ctx context.Context, tickets chan<- int, start time.Time) {
	for k := 0; ; k++ {
		at := time.Duration(float64(k) / lg.cfg.Rate * float64(time.Second))
		if at >= lg.cfg.Duration {
			// Without this a late context timer on a loaded machine lets
			// decisions due after Duration through.
			return
		}
		due := start.Add(at)
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		select {
		case <-ctx.Done():
			return
		case tickets <- k:
		}
	}
}

func (lg *loadRun) fail(msg string) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.failed++
	if lg.first == "" {
		lg.first = msg
	}
}

func (lg *loadRun) decisions(tickets <-chan int) {
	var mine []time.Duration
	sent := 0
	for k := range tickets {
		sent++
		body, _ := json.Marshal(DecideRequest{Key: fmt.Sprintf("load/pod-%d", k), Job: lg.cfg.Jobs[k%len(lg.cfg.Jobs)]})
		req, _ := http.NewRequest("POST", lg.cfg.URL+"/v1/decide", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if lg.cfg.ReadToken != "" {
			req.Header.Set("Authorization", "Bearer "+lg.cfg.ReadToken)
		}
		t0 := time.Now()
		r, err := lg.client.Do(req)
		if err != nil {
			lg.fail(err.Error())
			continue
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		mine = append(mine, time.Since(t0))
		if r.StatusCode != http.StatusOK {
			lg.fail(fmt.Sprintf("decide: %d %s", r.StatusCode, bytes.TrimSpace(b)))
		}
	}
	lg.mu.Lock()
	lg.lat = append(lg.lat, mine...)
	lg.sent += sent
	lg.mu.Unlock()
}

func (lg *loadRun) hotLoads(ctx context.Context) {
	t := time.NewTicker(lg.cfg.HotLoadEvery)
	defer t.Stop()
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		url := fmt.Sprintf("%s/v1/policies?name=load-%d", lg.cfg.URL, k)
		if lg.cfg.HotLoadArm != "" {
			url += "&arm=" + lg.cfg.HotLoadArm
		}
		req, _ := http.NewRequest("POST", url, bytes.NewReader(lg.cfg.Policies[k%len(lg.cfg.Policies)]))
		if lg.cfg.AdminToken != "" {
			req.Header.Set("Authorization", "Bearer "+lg.cfg.AdminToken)
		}
		t0 := time.Now()
		r, err := lg.client.Do(req)
		ok := err == nil && r.StatusCode == http.StatusOK
		if err == nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		lg.mu.Lock()
		if ok {
			lg.swaps = append(lg.swaps, time.Since(t0))
		} else {
			lg.swapFail++
		}
		lg.mu.Unlock()
	}
}

func quantile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(p*float64(len(d))))]
}

func (lg *loadRun) report(elapsed time.Duration) LoadReport {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	slices.Sort(lg.lat)
	slices.Sort(lg.swaps)
	r := LoadReport{Decisions: lg.sent, Failed: lg.failed, FirstFailure: lg.first, Elapsed: elapsed,
		P50: quantile(lg.lat, 0.5), P99: quantile(lg.lat, 0.99), Max: quantile(lg.lat, 1),
		HotLoads: len(lg.swaps), HotLoadsFailed: lg.swapFail, HotLoadP50: quantile(lg.swaps, 0.5), HotLoadMax: quantile(lg.swaps, 1)}
	r.RatePerS = float64(len(lg.lat)) / elapsed.Seconds()
	return r
}

// PreloadState is a state update that starts jobs of a synthetic
// workload on c until about frac of its CPU is requested (each job on
// the first of a few random machines that fits it), and advances the
// clock past the load history, so that a load test decides on a
// partly full cluster with a full history.
func PreloadState(c *env.Cluster, frac float64, seed uint64) (*StateRequest, error) {
	wc := env.DefaultWorkload
	wc.Horizon = 7200
	w, err := env.NewSyntheticWorkload(c, wc, seed)
	if err != nil {
		return nil, fmt.Errorf("preload: %w", err)
	}
	freeCPU := make([]int64, len(c.Machines))
	freeMem := make([]int64, len(c.Machines))
	var capCPU, used int64
	for i := range c.Machines {
		freeCPU[i], freeMem[i] = c.Machines[i].CPU, c.Machines[i].Mem
		capCPU += c.Machines[i].CPU
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c6f6164))
	req := &StateRequest{TimeS: f64ptr(float64(env.HistoryLen+5) * env.DefaultSimConfig.Tick)}
	// The workload's CPU jobs, again and again, until the share is met.
	for k := 0; k < 8*len(w.Jobs) && float64(used) < frac*float64(capCPU); k++ {
		j := &w.Jobs[k%len(w.Jobs)]
		if j.GPUs > 0 {
			continue // CPU jobs only: GPU placement depends on the devices
		}
		for try := 0; try < 8; try++ {
			i := rng.IntN(len(c.Machines))
			if freeCPU[i] >= j.CPU && freeMem[i] >= j.Mem {
				freeCPU[i] -= j.CPU
				freeMem[i] -= j.Mem
				used += j.CPU
				d := j.Duration
				req.Started = append(req.Started, StartedJSON{Key: fmt.Sprintf("preload/%d", k), Machine: c.Machines[i].Name,
					Job: JobJSON{CPUMilli: j.CPU, MemMiB: j.Mem, Kind: j.Kind.String(), DurationS: &d}})
				break
			}
		}
	}
	return req, nil
}

func f64ptr(x float64) *float64 { return &x }
