package datasets

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tegrl/tegrl/env"
)

// testCluster and testWorkload are a small synthetic cluster and its
// workload (GPU and CPU machines, every job kind).
func testCluster(t testing.TB, machines int, seed uint64) *env.Cluster {
	t.Helper()
	c, err := env.NewSyntheticCluster(machines, seed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testWorkload(t testing.TB, c *env.Cluster, horizon float64, seed uint64) *env.Workload {
	t.Helper()
	cfg := env.DefaultWorkload
	cfg.Horizon = horizon
	w, err := env.NewSyntheticWorkload(c, cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWorkloadRoundTrip(t *testing.T) {
	c := testCluster(t, 60, 3)
	w := testWorkload(t, c, 3600, 3)
	// Exercise what the generator leaves out: allowed models (nil and
	// empty kept apart).
	w.Jobs[0].GPUModels = []string{"A100", "V100M32"}
	w.Jobs[1].GPUModels = []string{}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var buf bytes.Buffer
	if err := WriteWorkloadTo(&buf, w, WriterOptions{BatchRows: 100, Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	got, err := ReadWorkloadFrom("jobs.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if !reflect.DeepEqual(got, w) {
		for i := range w.Jobs {
			if !reflect.DeepEqual(got.Jobs[i], w.Jobs[i]) {
				t.Fatalf("job %d: got %+v, want %+v", i, got.Jobs[i], w.Jobs[i])
			}
		}
		t.Fatalf("workload differs: name %q want %q, %d jobs want %d", got.Name, w.Name, len(got.Jobs), len(w.Jobs))
	}
	if got.Jobs[1].GPUModels == nil || got.Jobs[2].GPUModels != nil {
		t.Fatal("nil and empty GPU model lists not kept apart")
	}
	// Batches of 100 rows: the reader saw them one at a time.
	r, err := NewJobsReader("jobs.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	batches := 0
	for r.Next() {
		if n := len(r.Batch()); n > 100 {
			t.Fatalf("batch of %d rows, want <= 100", n)
		}
		batches++
	}
	if want := (len(w.Jobs) + 99) / 100; batches != want || r.Err() != nil {
		t.Fatalf("%d batches (err %v), want %d", batches, r.Err(), want)
	}
}

func TestClusterRoundTrip(t *testing.T) {
	for _, n := range []int{1, 45, 300} {
		c := testCluster(t, n, uint64(n))
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var buf bytes.Buffer
		if err := WriteClusterTo(&buf, c, WriterOptions{BatchRows: 64, Allocator: mem}); err != nil {
			t.Fatal(err)
		}
		got, err := ReadClusterFrom("machines.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("%d machines: cluster differs after the round trip", n)
		}
	}
}

// TestClusterRoundTripSubset: a cluster whose leaves and zones hold no
// racks, and with no GPU models, still round-trips exactly.
func TestClusterRoundTripSubset(t *testing.T) {
	c := testCluster(t, 400, 5).Subset(func(m *env.Machine) bool { return m.GPUs == 0 })
	if len(c.Machines) == 0 || len(c.Models) != 0 {
		t.Fatalf("subset: %d machines, models %v", len(c.Machines), c.Models)
	}
	var buf bytes.Buffer
	if err := WriteClusterTo(&buf, c, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadClusterFrom("machines.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("subset cluster differs after the round trip:\n got %+v\nwant %+v", got.Models, c.Models)
	}
}

func TestUsageRoundTrip(t *testing.T) {
	nan := float32(math.NaN())
	in := []UsageSample{
		{Machine: "m_1", Time: 0, CPUUtil: 41, MemUtil: 92, MemGPS: nan, MKPI: nan, NetIn: 43.04, NetOut: 33.08, DiskIO: 5},
		{Machine: "m_1", Time: 10, CPUUtil: 0, MemUtil: 100, MemGPS: 0.16, MKPI: 4, NetIn: 0, NetOut: 0, DiskIO: nan},
		{Machine: "m_2", Time: 691180, CPUUtil: 100, MemUtil: 0, MemGPS: 13.97, MKPI: 0, NetIn: 55.97, NetOut: 46.38, DiskIO: 100},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var buf bytes.Buffer
	w, err := NewUsageWriter(&buf, WriterOptions{BatchRows: 2, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if err := w.Append(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewUsageReader("usage.arrow", bytes.NewReader(buf.Bytes()), ReaderOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	var got []UsageSample
	for r.Next() {
		got = append(got, r.Batch()...)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	mem.AssertSize(t, 0)
	if len(got) != len(in) {
		t.Fatalf("%d samples, want %d", len(got), len(in))
	}
	for i := range in {
		a, b := got[i], in[i]
		same := a.Machine == b.Machine && a.Time == b.Time
		for _, p := range [][2]float32{{a.CPUUtil, b.CPUUtil}, {a.MemUtil, b.MemUtil}, {a.MemGPS, b.MemGPS}, {a.MKPI, b.MKPI},
			{a.NetIn, b.NetIn}, {a.NetOut, b.NetOut}, {a.DiskIO, b.DiskIO}} {
			same = same && math.Float32bits(p[0]) == math.Float32bits(p[1])
		}
		if !same {
			t.Fatalf("sample %d: got %+v, want %+v", i, a, b)
		}
	}
}

// TestCreateIsAtomic: a file path appears only once its writer closed
// cleanly; a failed write leaves nothing behind.
func TestCreateIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.arrow")
	w, err := CreateJobs(path, "x", WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists before Close: %v", path, err)
	}
	bad := env.Job{ID: 0, CPU: -1, Service: -1}
	if err := w.Append(&bad); err == nil || !strings.Contains(err.Error(), "cpu_milli") {
		t.Fatalf("negative CPU accepted or error without the column: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failed Append succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("files left after a failed write: %v", entries)
	}
}
