package datasets

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tegrl/tegrl/data"
	"github.com/tegrl/tegrl/env"
)

// traceRoots holds each test's folder of bundled traces.
var traceRoots sync.Map

// needTrace lays every bundled table (package data) out in a folder of the
// test's, under the names the publishers' folders use, and returns the path
// of rel in it.
func needTrace(t *testing.T, rel string) string {
	t.Helper()
	if root, ok := traceRoots.Load(t.Name()); ok {
		return filepath.Join(root.(string), rel)
	}
	root := t.TempDir()
	for _, name := range data.Names() {
		b, err := data.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	traceRoots.Store(t.Name(), root)
	return filepath.Join(root, rel)
}

func TestReadAlibaba2018Usage(t *testing.T) {
	in := "m_1932,386640,41,92,,,43.04,33.08,5\n" +
		"m_1932,386670,43,92,0.5,2,43.04,33.08,-1\n" +
		"m_1933,0,0,100,,,0,0,101\n"
	var got []UsageSample
	err := ReadAlibaba2018Usage("machine_usage.csv", strings.NewReader(in), func(u *UsageSample) error {
		got = append(got, *u)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d samples, want 3", len(got))
	}
	a := got[0]
	if a.Machine != "m_1932" || a.Time != 386640 || a.CPUUtil != 41 || a.MemUtil != 92 || !math.IsNaN(float64(a.MemGPS)) ||
		!math.IsNaN(float64(a.MKPI)) || a.NetIn != 43.04 || a.NetOut != 33.08 || a.DiskIO != 5 {
		t.Fatalf("row 1: %+v", a)
	}
	if b := got[1]; b.MemGPS != 0.5 || b.MKPI != 2 || !math.IsNaN(float64(b.DiskIO)) {
		t.Fatalf("row 2: %+v (disk -1 is missing)", b)
	}
	if c := got[2]; !math.IsNaN(float64(c.DiskIO)) || c.Machine != "m_1933" {
		t.Fatalf("row 3: %+v (disk 101 is missing)", c)
	}
}

func TestReadAlibaba2018UsageErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"m_1,0,41,92,,,1,1,5\nm_1,10,abc,92,,,1,1,5\n", "machine_usage.csv:2: column 3 (cpu_util_percent): \"abc\" is not a finite number"},
		{"m_1,0,141,92,,,1,1,5\n", "machine_usage.csv:1: column 3 (cpu_util_percent): 141 outside [0, 100]"},
		{"m_1,0,41,92,,,-1,1,5\n", "machine_usage.csv:1: column 7 (net_in): -1 must be finite and >= 0"},
		{"m_1,0,41,92,,,1,1,50.5x\n", "column 9 (disk_io_percent)"},
		{"m_1,0,41,,,,1,1,5\n", "column 4 (mem_util_percent): \"\" is not a finite number"},
		{",0,41,92,,,1,1,5\n", "column 1 (machine_id): empty machine id"},
		{"m_1,1.5,41,92,,,1,1,5\n", "column 2 (time_stamp): \"1.5\" is not an integer"},
		{"m_1,0,41,92\n", "machine_usage.csv:1: column 1: wrong number of fields"},
		{"m_1,0,41,92,,,1,1,102\n", "column 9 (disk_io_percent): 102 outside [0, 100]"},
	}
	for _, tc := range cases {
		err := ReadAlibaba2018Usage("machine_usage.csv", strings.NewReader(tc.in), func(*UsageSample) error { return nil })
		var pe *env.ParseError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &pe) {
			t.Errorf("%q: got %v, want a ParseError containing %q", tc.in, err, tc.want)
		}
	}
}

// TestConvertAlibabaGPU converts the real GPU trace and checks that the
// files give back exactly what env's loaders read.
func TestConvertAlibabaGPU(t *testing.T) {
	dir := needTrace(t, "alibaba-gpu-v2023")
	out := t.TempDir()
	res, err := ConvertAlibabaGPU(dir, out, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Machines != 1523 || res.Jobs != 5706 {
		t.Fatalf("converted %d machines, %d jobs; the trace has 1,523 and 5,706", res.Machines, res.Jobs)
	}
	wantC, err := env.LoadAlibabaGPUNodes(filepath.Join(dir, "nodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	gotC, err := ReadCluster(filepath.Join(out, MachinesFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotC, wantC) {
		t.Fatalf("machines.arrow differs from nodes.csv: %v", err)
	}
	wantW, err := env.LoadAlibabaGPUPods(filepath.Join(dir, "pods.csv"), env.GPUTraceOptions{Compress: 1})
	if err != nil {
		t.Fatal(err)
	}
	gotW, err := ReadWorkload(filepath.Join(out, JobsFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotW, wantW) {
		t.Fatalf("jobs.arrow differs from pods.csv: %v", err)
	}
}

// The bundled GPU trace and 2018 batch table convert without a folder,
// to the same Go values the simulator loads from them.
func TestConvertBundled(t *testing.T) {
	out := t.TempDir()
	res, err := ConvertAlibabaGPU("", out, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Machines != 1523 || res.Jobs != 5706 {
		t.Fatalf("converted %d machines, %d jobs; the bundled trace has 1,523 and 5,706", res.Machines, res.Jobs)
	}
	wantC, err := env.ClusterSpec{Source: "alibaba-gpu"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	gotC, err := ReadCluster(filepath.Join(out, MachinesFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotC, wantC) {
		t.Fatalf("machines.arrow differs from the bundled nodes.csv: %v", err)
	}
	bres, err := ConvertAlibabaBatch("", t.TempDir(), ConvertOptions{MaxInstances: 1})
	if err != nil {
		t.Fatal(err)
	}
	if bres.Jobs != 31756 {
		t.Errorf("converted %d batch jobs; the bundled table gives 31,756 at one instance per task", bres.Jobs)
	}
}

// TestConvertAlibaba2018 converts the 2018 trace: machines (env's loader),
// usage (the streaming CSV reader; the first rows under -short) and batch
// jobs (env's loader, one instance per task).
func TestConvertAlibaba2018(t *testing.T) {
	dir := needTrace(t, "alibaba-v2018")
	needTrace(t, "alibaba-v2018-batch/jobs.csv")
	src := dir
	if testing.Short() {
		// A copy with the first 5,000 usage rows; machines and jobs as
		// they are (they load in well under a second).
		src = filepath.Join(t.TempDir(), "alibaba-v2018")
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Symlink(mustAbs(t, filepath.Join(dir, "machine_meta.csv")), filepath.Join(src, "machine_meta.csv"))
		os.Symlink(mustAbs(t, needTrace(t, "alibaba-v2018-batch/jobs.csv")), filepath.Join(src, "jobs.csv"))
		head(t, filepath.Join(dir, "machine_usage.csv"), filepath.Join(src, "machine_usage.csv"), 5000)
	}
	out := t.TempDir()
	res, err := ConvertAlibaba2018(src, out, ConvertOptions{MaxInstances: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantUsage := int64(100002)
	if testing.Short() {
		wantUsage = 5000
	}
	if res.Machines != 4034 || res.Jobs != 31756 || res.Usage != wantUsage {
		t.Fatalf("converted %d machines, %d jobs, %d usage samples; want 4,034, 31,756, %d", res.Machines, res.Jobs, res.Usage, wantUsage)
	}
	wantC, err := env.LoadAlibaba2018Machines(filepath.Join(dir, "machine_meta.csv"), env.Alibaba2018Options{})
	if err != nil {
		t.Fatal(err)
	}
	gotC, err := ReadCluster(filepath.Join(out, MachinesFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotC, wantC) {
		t.Fatalf("machines.arrow differs from machine_meta.csv: %v", err)
	}
	// Usage: every sample as the CSV reader gave it, in order.
	f, err := os.Open(filepath.Join(src, "machine_usage.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []UsageSample
	if err := ReadAlibaba2018Usage("machine_usage.csv", f, func(u *UsageSample) error { want = append(want, *u); return nil }); err != nil {
		t.Fatal(err)
	}
	r, err := OpenUsage(filepath.Join(out, UsageFile), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	k := 0
	for r.Next() {
		for _, u := range r.Batch() {
			if !sameUsage(u, want[k]) {
				t.Fatalf("usage row %d: %+v, want %+v", k, u, want[k])
			}
			k++
		}
	}
	if r.Err() != nil || k != len(want) {
		t.Fatalf("%d usage rows (err %v), want %d", k, r.Err(), len(want))
	}
}

func sameUsage(a, b UsageSample) bool {
	same := a.Machine == b.Machine && a.Time == b.Time
	for _, p := range [][2]float32{{a.CPUUtil, b.CPUUtil}, {a.MemUtil, b.MemUtil}, {a.MemGPS, b.MemGPS}, {a.MKPI, b.MKPI},
		{a.NetIn, b.NetIn}, {a.NetOut, b.NetOut}, {a.DiskIO, b.DiskIO}} {
		same = same && math.Float32bits(p[0]) == math.Float32bits(p[1])
	}
	return same
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// head copies the first n lines of src to dst.
func head(t *testing.T, src, dst string, n int) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var b bytes.Buffer
	s := bufio.NewScanner(in)
	for i := 0; i < n && s.Scan(); i++ {
		b.Write(s.Bytes())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGenerate(t *testing.T) {
	out := t.TempDir()
	res, err := Generate(out, GenConfig{Machines: 80, Seed: 4, Workload: env.WorkloadConfig{Horizon: 1800, Load: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	c := testCluster(t, 80, 4)
	cfg := env.DefaultWorkload
	cfg.Horizon, cfg.Load = 1800, 0.5
	w, err := env.NewSyntheticWorkload(c, cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	gotC, err := ReadCluster(filepath.Join(out, MachinesFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotC, c) {
		t.Fatalf("machines.arrow: %v", err)
	}
	gotW, err := ReadWorkload(filepath.Join(out, JobsFile), ReaderOptions{})
	if err != nil || !reflect.DeepEqual(gotW, w) || res.Jobs != len(w.Jobs) {
		t.Fatalf("jobs.arrow: %v", err)
	}
}

func TestInspect(t *testing.T) {
	out := t.TempDir()
	if _, err := Generate(out, GenConfig{Machines: 30, Seed: 2, Workload: env.WorkloadConfig{Horizon: 600}}); err != nil {
		t.Fatal(err)
	}
	s, err := Inspect(filepath.Join(out, MachinesFile))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "machines" || !s.Valid || s.Rows != 30 || s.Batches != 1 || !s.HashMatches || s.FormatVersion != "1" {
		t.Fatalf("summary %+v", s)
	}
	for _, c := range s.Columns {
		if c.Name == "cpu_milli" && (c.Count != 30 || c.Min <= 0 || c.Max < c.Mean || c.Mean < c.Min) {
			t.Fatalf("cpu_milli stats %+v", c)
		}
		if c.Name == "gpu_group" && c.Nulls != 0 {
			t.Fatalf("gpu_group stats %+v", c)
		}
	}
	// A corrupted file is summarised as far as it reads, and not valid.
	p := filepath.Join(out, JobsFile)
	data, _ := os.ReadFile(p)
	i := bytes.Index(data, []byte("batch"))
	data[i] = 'c' // a kind that does not exist, in the first batch
	os.WriteFile(p, data, 0o644)
	s, err = Inspect(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Valid || !strings.Contains(s.Error, "checksum") {
		t.Fatalf("corrupt jobs file: valid %v, error %q", s.Valid, s.Error)
	}
}
