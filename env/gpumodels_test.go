package env

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

const tinyModels = `{"models": {
 "X1": {"base": "v100", "speed": 0.5, "source": "test"},
 "K80 board": {"base": "k80", "speed": 1, "alias": true, "source": "test"},
 "X2": {"base": "k80", "speed": 3, "source": "test"}}}`

func TestGPUModelsDerivedTable(t *testing.T) {
	tab, err := LoadThroughputTable(strings.NewReader(tinyTable))
	if err != nil {
		t.Fatal(err)
	}
	gm, err := LoadGPUModels(strings.NewReader(tinyModels))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tab.WithGPUModels(gm, []string{"X1", "K80 board", "X2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(out.GPUs, ","); got != "k80,v100,x1,x2" {
		t.Fatalf("GPUs %s, want k80,v100,x1,x2", got)
	}
	m, n := out.Model("M"), out.Model("N")
	x1, _ := out.GPU("x1")
	x2, _ := out.GPU("x2")
	v, _ := out.GPU("v100")
	k, _ := out.GPU("k80")
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"M x1 alone", out.Throughput(m, x1, 1, false), 5},         // 0.5 × 10
		{"M x1 scale 2 spread", out.Throughput(m, x1, 2, true), 2}, // 0.5 × 4
		{"N x1", out.Throughput(n, x1, 1, false), 2.5},             // 0.5 × 5
		{"M x2", out.Throughput(m, x2, 1, false), 6},               // 3 × 2
		{"N x2 (cannot run on k80)", out.Throughput(n, x2, 1, false), 0},
		{"M v100 unchanged", out.Throughput(m, v, 1, false), 10},
		{"M k80 unchanged", out.Throughput(m, k, 2, false), 3},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	ta, tb, ok := out.PairThroughput(m, n, x1, 1)
	if !ok || ta != 3.5 || tb != 1.5 { // 0.5 × (7, 3)
		t.Errorf("pair M,N on x1: %v %v %v, want 3.5 1.5 true", ta, tb, ok)
	}
	if _, _, ok := out.PairThroughput(m, n, x2, 1); ok {
		t.Error("pair on x2: k80 has no pair entries")
	}
	// The relative speed of x1 to v100: M 5/10, N 2.5/5.
	if got := out.RelativeSpeed(x1, v); got != 0.5 {
		t.Errorf("relative speed x1/v100 %v, want 0.5", got)
	}
	if name, _ := gm.TypeName("K80 board"); name != "k80" {
		t.Errorf("alias type %q, want k80", name)
	}
	if _, err := tab.WithGPUModels(gm, []string{"H100"}); !errors.Is(err, ErrUnknownGPU) {
		t.Errorf("unknown model: %v, want ErrUnknownGPU", err)
	}
}

func TestGPUModelsErrors(t *testing.T) {
	for _, bad := range []string{
		``, `[]`, `{}`, `{"models": {}}`,
		`{"models": {"A": {"base": "v100", "speed": 0}}}`,
		`{"models": {"A": {"base": "v100", "speed": -1}}}`,
		`{"models": {"A": {"base": "v100", "speed": 101}}}`,
		`{"models": {"A": {"base": "", "speed": 1}}}`,
		`{"models": {"": {"base": "v100", "speed": 1}}}`,
		`{"models": {"A": {"base": "v100", "speed": 2, "alias": true}}}`,
		`{"models": {"A": {"base": "v100", "speed": 1, "colour": "red"}}}`,
		`{"models": {"A": {"base": "v100", "speed": 1}}} {}`,
	} {
		if _, err := LoadGPUModels(strings.NewReader(bad)); err == nil {
			t.Errorf("LoadGPUModels(%q): no error", bad)
		}
	}
	tab, _ := LoadThroughputTable(strings.NewReader(tinyTable))
	gm, _ := LoadGPUModels(strings.NewReader(`{"models": {"A": {"base": "p100", "speed": 1}, "V100": {"base": "k80", "speed": 2}}}`))
	if _, err := tab.WithGPUModels(gm, []string{"A"}); !errors.Is(err, ErrUnknownGPU) {
		t.Errorf("base not in the table: %v, want ErrUnknownGPU", err)
	}
	if _, err := tab.WithGPUModels(gm, []string{"V100"}); err == nil {
		t.Error("derived type v100 clashes with the table's: no error")
	}
}

// The bundled mapping covers every GPU model of the bundled node lists.
func TestBundledGPUModelsCoverNodeLists(t *testing.T) {
	gm := BundledGPUModels()
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		gpus, kind int
	}{{"openb", 6212, 7}, {"spot", 10412, 6}} {
		sc, err := NamedServerCluster(c.name, tab, gm, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Cluster.TotalGPUs(); got != c.gpus {
			t.Errorf("%s: %d GPUs, want %d", c.name, got, c.gpus)
		}
		sum := 0
		for i, sz := range sc.Servers {
			n := 0
			for _, g := range sz {
				n += g
			}
			if n != sc.Cluster.Capacity[i] {
				t.Errorf("%s type %d: servers hold %d GPUs, capacity %d", c.name, i, n, sc.Cluster.Capacity[i])
			}
			sum += len(sz)
		}
		if len(sc.Cluster.Types) != c.kind {
			t.Errorf("%s: %d GPU types (%s), want %d", c.name, len(sc.Cluster.Types), sc.Cluster, c.kind)
		}
		t.Logf("%s: %d servers, %s", c.name, sum, sc.Cluster)
	}
}

func TestOpenbClusterHand(t *testing.T) {
	tab, _ := LoadThroughputTable(strings.NewReader(tinyTable))
	gm, _ := LoadGPUModels(strings.NewReader(tinyModels))
	servers := []NodeServer{{"X1", 2}, {"", 0}, {"X1", 4}, {"K80 board", 1}, {"X1", 2}}
	sc, err := NewServerCluster("t", tab, gm, servers, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Cluster.String(); got != "k80=1,x1=8" {
		t.Fatalf("cluster %s, want k80=1,x1=8", got)
	}
	if got := sc.Servers; len(got) != 2 || len(got[1]) != 3 || got[1][0] != 4 || got[1][1] != 2 || got[1][2] != 2 {
		t.Fatalf("servers %v, want [[1] [4 2 2]]", got)
	}
	// Workers: k80 server 0 (rack 0); x1 servers 1 (4 GPUs, rack 0),
	// 2 and 3 (rack 1).
	pol, _ := AllocationPolicyByName("fifo_perf")
	s, err := NewRoundSimServers(sc, pol, &sliceJobs{}, RoundConfig{})
	if err != nil {
		t.Fatal(err)
	}
	wantSrv := []int{0, 1, 1, 1, 1, 2, 2, 3, 3}
	wantRack := []int{0, 0, 0, 0, 0, 1, 1, 1, 1}
	for w := range wantSrv {
		if s.workerSrv[w] != wantSrv[w] || s.workerRack[w] != wantRack[w] {
			t.Fatalf("worker %d: server %d rack %d, want %d %d", w, s.workerSrv[w], s.workerRack[w], wantSrv[w], wantRack[w])
		}
	}
	if _, err := NewServerCluster("t", tab, gm, []NodeServer{{"Z", 1}}, 0); !errors.Is(err, ErrUnknownGPU) {
		t.Errorf("unknown model: %v", err)
	}
}

func TestReadNodeCSVErrors(t *testing.T) {
	for _, bad := range []string{"", "a,b\n1,2\n", "model,gpu\nT4,x\n", "model,gpu\nT4,-1\n", "model,gpu\n,2\n"} {
		if _, err := readNodeCSV(strings.NewReader(bad), "model", "gpu"); err == nil {
			t.Errorf("readNodeCSV(%q): no error", bad)
		}
	}
}

func FuzzLoadGPUModels(f *testing.F) {
	f.Add([]byte(tinyModels))
	f.Add(bundledGPUModels)
	f.Add([]byte(`{"models": {"A": {"base": "v100", "speed": 1e308}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		gm, err := LoadGPUModels(bytes.NewReader(b))
		if err != nil {
			return
		}
		for name, g := range gm.Models {
			if !(g.Speed > 0) || g.Speed > maxGPUModelSpeed || math.IsNaN(g.Speed) || g.Base == "" || name == "" {
				t.Fatalf("accepted %q: %+v", name, g)
			}
			if _, err := gm.TypeName(name); err != nil {
				t.Fatalf("TypeName(%q): %v", name, err)
			}
		}
	})
}
