package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const lateNodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,8,V100\nn1,32000,65536,8,V100\n"

// latePods writes pods created from t0 on: four 4-GPU pods of 1,000 s,
// 100 s apart.
func latePods(t0 int) string {
	var b strings.Builder
	b.WriteString(podsHeader)
	for k := range 4 {
		c := t0 + 100*k
		fmt.Fprintf(&b, "p%d,4000,8192,4,1000,,BE,Running,%d,%d,%d\n", k, c, c+1000, c)
	}
	return b.String()
}

func runLate(t *testing.T, t0 int) Metrics {
	t.Helper()
	c, err := ReadAlibabaGPUNodes("nodes.csv", strings.NewReader(lateNodes))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ReadAlibabaGPUPods("pods.csv", strings.NewReader(latePods(t0)), GPUTraceOptions{Compress: 1})
	if err != nil {
		t.Fatal(err)
	}
	sched, _ := NewScheduler("bestfit")
	sim, err := NewSim(c, w, sched, SimConfig{Seed: 1, MTBF: -1})
	if err != nil {
		t.Fatal(err)
	}
	return sim.Run()
}

// TestLateTraceStartsAtFirstArrival: a trace whose pods are created from
// 12,194,827 s on (the openb trace's held-out last 30%) runs from its first
// pod, so it reports the same metrics, utilisation and energy included, as
// the same pods created from 0 — not 141 idle days averaged in. The pods
// ask 4 GPUs × 1,000 s × 4 pods = 16,000 GPU-s of the 16 GPUs over the
// run, which ends when the last pod leaves.
func TestLateTraceStartsAtFirstArrival(t *testing.T) {
	early, late := runLate(t, 0), runLate(t, 12_194_827)
	a, _ := json.Marshal(early)
	b, _ := json.Marshal(late)
	if string(a) != string(b) {
		t.Fatalf("late trace differs from the same trace at 0:\n%s\n%s", b, a)
	}
	if late.SimTimeS > 2500 || late.JobsCompleted != 4 {
		t.Fatalf("late trace ran %v simulated s and completed %d, want about 2,000 and 4", late.SimTimeS, late.JobsCompleted)
	}
	if want := 16000 / (16 * late.SimTimeS); math.Abs(late.UtilGPU-want) > 0.05 {
		t.Fatalf("late trace: GPU utilisation %.3f, want %.3f (16,000 GPU-s over %v s)", late.UtilGPU, want, late.SimTimeS)
	}
}

// TestTraceWindow: the bundled pods created in [12,000,000, 12,100,000)
// are 306 (awk over pods.csv), from openb-pod at 12,000,287 s to one at
// 12,099,894 s, and time starts at the first.
func TestTraceWindow(t *testing.T) {
	win := TraceWindow{Start: 12_000_000, Length: 100_000}
	w, err := LoadAlibabaGPUPods(bundled, GPUTraceOptions{Compress: 1, Window: win})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 306 || w.Jobs[0].Arrival != 0 || w.Jobs[305].Arrival != 12_099_894-12_000_287 {
		t.Fatalf("%d jobs from %v to %v, want 306 from 0 to %d", len(w.Jobs), w.Jobs[0].Arrival, w.Jobs[len(w.Jobs)-1].Arrival, 12_099_894-12_000_287)
	}
	// Compression divides the shifted times.
	w2, err := LoadAlibabaGPUPods(bundled, GPUTraceOptions{Compress: 10, Window: win})
	if err != nil || w2.Jobs[305].Arrival != float64(12_099_894-12_000_287)/10 {
		t.Fatalf("compressed window: %v, last arrival %v", err, w2.Jobs[305].Arrival)
	}
	// The batch trace takes the same window.
	b, err := LoadAlibaba2018Batch(bundled, Alibaba2018Options{MaxInstances: 1, Window: TraceWindow{Start: 3600, Length: 3600}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Jobs[0].Arrival != 0 || b.Jobs[len(b.Jobs)-1].Arrival >= 3600 {
		t.Fatalf("batch window: arrivals %v to %v", b.Jobs[0].Arrival, b.Jobs[len(b.Jobs)-1].Arrival)
	}
	if _, err := LoadAlibabaGPUPods(bundled, GPUTraceOptions{Compress: 1, Window: TraceWindow{Start: 2e7}}); err == nil || !strings.Contains(err.Error(), "no pods created in the window from 20000000 s") {
		t.Fatalf("empty window: %v", err)
	}
	if _, err := LoadAlibabaGPUPods(bundled, GPUTraceOptions{Compress: 1, Window: TraceWindow{Start: -1}}); err == nil {
		t.Fatal("negative start accepted")
	}
}

// TestOfferedLoad checks the offered load by hand: one machine of 10 cores
// and 2 GPUs; jobs at 0 (2 cores, 1 GPU, 50 s), 50 (4 cores, 200 s) and 100
// (1 core, 10 s). The window is [0, 100]: CPU work 2·50 + 4·50 + 1·0 = 300
// core-s of 1,000; GPU work 1·50 of 200 GPU-s.
func TestOfferedLoad(t *testing.T) {
	c := &Cluster{Machines: []Machine{newMachine("m", 10000, 1<<20, 2, "T4", 0)}}
	w := &Workload{Jobs: []Job{
		{Arrival: 0, Duration: 50, CPU: 2000, GPUs: 1, GPUMilli: 1000},
		{Arrival: 50, Duration: 200, CPU: 4000},
		{Arrival: 100, Duration: 10, CPU: 1000},
	}}
	l := OfferedLoad(w, c)
	if l.SpanS != 100 || l.CPU != 0.3 || l.GPU != 0.25 || l.Offered() != 0.3 {
		t.Fatalf("load %+v, want span 100, CPU 0.3, GPU 0.25", l)
	}
}

// TestScaleTraceLoad: the bundled trace's pods of three hours (week 18 of
// the trace: 64 pods) offer about 0.1% of the openb cluster's GPUs; resampling brings
// them to the target within one job's work, the same seed gives the same
// jobs, a different seed others, and thinning keeps a subset of the pods.
func TestScaleTraceLoad(t *testing.T) {
	c, err := LoadAlibabaGPUNodes(bundled)
	if err != nil {
		t.Fatal(err)
	}
	w, err := LoadAlibabaGPUPods(bundled, GPUTraceOptions{Compress: 1, Window: TraceWindow{Start: 17 * 7 * 86400, Length: 3 * 3600}})
	if err != nil {
		t.Fatal(err)
	}
	base := OfferedLoad(w, c)
	if base.Offered() > 0.01 {
		t.Fatalf("the trace's day offers %.4f, expected a near-empty cluster", base.Offered())
	}
	for _, target := range []float64{0.8, 1.2} {
		s, err := ScaleTraceLoad(w, c, target, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := OfferedLoad(s, c)
		if got.Offered() < target || got.Offered() > target*1.01 {
			t.Fatalf("target %v: offered %.4f", target, got.Offered())
		}
		if got.SpanS > base.SpanS || s.Jobs[0].Arrival != 0 {
			t.Fatalf("target %v: span %v (trace %v), first arrival %v", target, got.SpanS, base.SpanS, s.Jobs[0].Arrival)
		}
		for i := range s.Jobs {
			if s.Jobs[i].ID != i || s.Jobs[i].Validate() != nil || (i > 0 && s.Jobs[i].Arrival < s.Jobs[i-1].Arrival) {
				t.Fatalf("target %v: job %d = %+v", target, i, s.Jobs[i])
			}
		}
		again, _ := ScaleTraceLoad(w, c, target, 1)
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("target %v: same seed, different jobs", target)
		}
		other, _ := ScaleTraceLoad(w, c, target, 2)
		if reflect.DeepEqual(other, s) {
			t.Fatalf("target %v: seeds 1 and 2 give the same jobs", target)
		}
	}
	half, err := ScaleTraceLoad(w, c, base.Offered()/2, 1)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, j := range w.Jobs {
		names[j.Name] = true
	}
	for _, j := range half.Jobs {
		if !names[j.Name] {
			t.Fatalf("thinning made up job %q", j.Name)
		}
	}
	if hl := OfferedLoad(half, c).Offered(); len(half.Jobs) >= len(w.Jobs) || hl < base.Offered()/2*0.999 || hl > base.Offered() {
		t.Fatalf("thinned to %d of %d jobs, offered %.5f (trace %.5f)", len(half.Jobs), len(w.Jobs), hl, base.Offered())
	}
	if _, err := ScaleTraceLoad(w, c, 0, 1); err == nil {
		t.Fatal("load 0 accepted")
	}
}

// TestTraceSpecs: a source alone is the bundled table, SOURCE:FILE a file
// (plain or .gz) or a folder holding the table; a missing file is said to
// be missing.
func TestTraceSpecs(t *testing.T) {
	cs, err := ParseClusterSpec("alibaba-gpu")
	if err != nil || cs.Path != "" {
		t.Fatalf("alibaba-gpu: %+v %v", cs, err)
	}
	c, err := cs.Load()
	if err != nil || len(c.Machines) != 1523 || c.TotalGPUs() != 6212 {
		t.Fatalf("bundled nodes: %v", err)
	}
	if got := cs.Describe(c); got != "cluster: 1523 machines, 6212 GPUs (alibaba-gpu, bundled)" {
		t.Fatalf("Describe = %q", got)
	}
	ws, err := ParseWorkloadSpec("alibaba-batch")
	if err != nil {
		t.Fatal(err)
	}
	ws.MaxInstances = 1
	if w, err := ws.Load(c); err != nil || len(w.Jobs) != 31756 {
		t.Fatalf("bundled batch: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nodes.csv"), []byte(lateNodes), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"alibaba-gpu:" + dir, "alibaba-gpu:" + filepath.Join(dir, "nodes.csv")} {
		cs, err := ParseClusterSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := cs.Load(); err != nil || len(c.Machines) != 2 {
			t.Fatalf("%s: %v", spec, err)
		}
	}
	missing := filepath.Join(dir, "nope.csv")
	cs, _ = ParseClusterSpec("alibaba-gpu:" + missing)
	_, err = cs.Load()
	if err == nil || !errors.Is(err, ErrNoSuchFile) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing+": no such file") {
		t.Fatalf("missing file: %v", err)
	}
	for _, bad := range []string{"alibaba-gpu:", "nope", "nope:x"} {
		if _, err := ParseClusterSpec(bad); err == nil {
			t.Fatalf("cluster %q accepted", bad)
		}
	}
	if _, err := ParseWorkloadSpec("alibaba-2018"); err == nil || !strings.Contains(err.Error(), "alibaba-batch") {
		t.Fatalf("workload alibaba-2018: %v", err)
	}
	// Tick: a trace's tick scales with its compression.
	ws = WorkloadSpec{Source: "alibaba-gpu", Compress: 100}
	if got := ws.Tick(10); math.Abs(got-0.1) > 1e-15 {
		t.Fatalf("Tick(10) at compress 100 = %v", got)
	}
	if got := (WorkloadSpec{Source: "synthetic", Compress: 100}).Tick(10); got != 10 {
		t.Fatalf("synthetic Tick = %v", got)
	}
}
