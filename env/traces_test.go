package env

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bundled is the path the loaders read as the repository's bundled copy
// of a table (package data).
const bundled = ""

func TestLoadAlibabaGPUNodes(t *testing.T) {
	c, err := LoadAlibabaGPUNodes(bundled)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	gpuMachines, noGPU := 0, 0
	for i := range c.Machines {
		if c.Machines[i].GPUs > 0 {
			gpuMachines++
		} else {
			noGPU++
		}
	}
	if len(c.Machines) != 1523 || c.TotalGPUs() != 6212 || gpuMachines != 1213 || noGPU != 310 {
		t.Fatalf("machines %d GPUs %d GPU machines %d without %d, want 1523 6212 1213 310",
			len(c.Machines), c.TotalGPUs(), gpuMachines, noGPU)
	}
	if want := []string{"A10", "G2", "G3", "P100", "T4", "V100M16", "V100M32"}; !slices.Equal(c.Models, want) {
		t.Fatalf("Models %v, want %v", c.Models, want)
	}
	// First row: openb-node-0000,32000,262144,0,
	m := c.Machines[0]
	if m.Name != "openb-node-0000" || m.CPU != 32000 || m.Mem != 262144 || m.GPUs != 0 || m.GPUModel != "" {
		t.Fatalf("machine 0 = %+v", m)
	}
	// 1523 machines in racks of 20: 77 racks, 10 leaves, 2 zones.
	if len(c.Racks) != 77 || len(c.Leaves) != 10 || len(c.Zones) != 2 {
		t.Fatalf("racks/leaves/zones %d/%d/%d, want 77/10/2", len(c.Racks), len(c.Leaves), len(c.Zones))
	}
	g := c.GPUMachines()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(g.Machines) != 1213 || g.TotalGPUs() != 6212 {
		t.Fatalf("GPUMachines: %d machines %d GPUs, want 1213 6212", len(g.Machines), g.TotalGPUs())
	}
	if !slices.Equal(g.Models, c.Models) {
		t.Fatalf("GPUMachines models %v, want %v", g.Models, c.Models)
	}
}

func TestLoadAlibabaGPUPods(t *testing.T) {
	w, err := LoadAlibabaGPUPods(bundled, GPUTraceOptions{Compress: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 5706 {
		t.Fatalf("%d jobs, want 5706", len(w.Jobs))
	}
	byName := map[string]*Job{}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
		if j.ID != i || (i > 0 && j.Arrival < w.Jobs[i-1].Arrival) {
			t.Fatalf("job %d: ID %d arrival %v not sorted", i, j.ID, j.Arrival)
		}
		byName[j.Name] = j
	}
	// openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
	j := byName["openb-pod-0001"]
	if j == nil || j.CPU != 6000 || j.Mem != 12288 || j.GPUs != 1 || j.GPUMilli != 460 || j.QoS != LatencySensitive ||
		j.Arrival != 427061 || j.Duration != 12902960-427061 || j.Kind != Service || j.LatencySLO != 60 || j.Deadline != 0 ||
		len(j.GPUModels) != 0 || !j.Migratable || j.Tenant != int(LatencySensitive) {
		t.Fatalf("openb-pod-0001 = %+v", j)
	}
	// openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497
	// 8 GPUs: a training gang; deadline 3 x 1332357 + 300.
	j = byName["openb-pod-0017"]
	if j == nil || j.GPUs != 8 || j.GPUMilli != 1000 || j.QoS != Burstable || j.Kind != Training ||
		j.Duration != 1332357 || j.Deadline != 3*1332357+300 || j.Migratable {
		t.Fatalf("openb-pod-0017 = %+v", j)
	}
	// openb-pod-5705,8000,30517,1,470,,BE,Pending,12194774,12196860,
	// never scheduled: duration from creation, 12196860-12194774 = 2086.
	j = byName["openb-pod-5705"]
	if j == nil || j.Kind != Batch || j.QoS != BestEffort || j.Arrival != 12194774 || j.Duration != 2086 || j.Deadline != 3*2086+300 {
		t.Fatalf("openb-pod-5705 = %+v", j)
	}
	// openb-pod-5704,...,BE,Running,12194720,12197048,12197002: 46 s.
	if j = byName["openb-pod-5704"]; j == nil || j.Arrival != 12194720 || j.Duration != 46 {
		t.Fatalf("openb-pod-5704 = %+v", j)
	}
}

func TestLoadAlibaba2018Machines(t *testing.T) {
	c, err := LoadAlibaba2018Machines(bundled, Alibaba2018Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// 4,034 machines in 292 failure_domain_1 racks under 20
	// failure_domain_2 leaves (3 zones of up to 8 leaves).
	if len(c.Machines) != 4034 || len(c.Racks) != 292 || len(c.Leaves) != 20 || len(c.Zones) != 3 {
		t.Fatalf("machines/racks/leaves/zones %d/%d/%d/%d, want 4034/292/20/3", len(c.Machines), len(c.Racks), len(c.Leaves), len(c.Zones))
	}
	// m_1,0,219,17,96,100,USING: 96 cores, mem_size 100 = 512 GiB.
	m := c.Machines[0]
	if m.Name != "m_1" || m.CPU != 96000 || m.Mem != 512*1024 || m.GPUs != 0 {
		t.Fatalf("machine 0 = %+v", m)
	}
	if rk := c.Racks[m.Rack]; rk.Name != "fd1-219" || c.Leaves[rk.Leaf].Name != "fd2-17" {
		t.Fatalf("m_1 in rack %q leaf %q, want fd1-219 fd2-17", rk.Name, c.Leaves[rk.Leaf].Name)
	}
	// Machines keep the file's order of first appearance; the second is
	// m_10,0,128,17,...: another rack under the same leaf: 2 hops. The
	// third, m_100,0,9,9,...: a new leaf (leaf 1, zone 0): 3 hops from m_1.
	if m2 := c.Machines[1]; m2.Name != "m_10" || c.Racks[m2.Rack].Name != "fd1-128" || c.Hops(0, 1) != 2 || c.Hops(0, 2) != 3 {
		t.Fatalf("machine 1 = %+v, hops %d", m2, c.Hops(0, 1))
	}
	// MemMiB scales mem_size.
	c2, err := LoadAlibaba2018Machines(bundled, Alibaba2018Options{MemMiB: 1000})
	if err != nil || c2.Machines[0].Mem != 1000 {
		t.Fatalf("MemMiB 1000: %v, mem %d", err, c2.Machines[0].Mem)
	}
}

func TestLoadAlibaba2018Batch(t *testing.T) {
	p := bundled
	w, err := LoadAlibaba2018Batch(p, Alibaba2018Options{MaxInstances: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 31756 {
		t.Fatalf("%d jobs, want 31756", len(w.Jobs))
	}
	for i := range w.Jobs {
		if err := w.Jobs[i].Validate(); err != nil {
			t.Fatal(err)
		}
		if i > 0 && w.Jobs[i].Arrival < w.Jobs[i-1].Arrival {
			t.Fatalf("job %d not sorted by arrival", i)
		}
	}
	// First in arrival order: the first row with submit_time 0:
	// 2831,0,131.96446700507613,0.5,0.008935366137757875,1750,9550,197,0
	// memory 0.008935366137757875 x 524288 MiB = 4684.705 -> 4685.
	j := w.Jobs[0]
	if j.Name != "j1750-t9550-i0" || j.Arrival != 0 || j.Duration != 131.96446700507613 || j.CPU != 500 || j.Mem != 4685 ||
		j.Tenant != 1750%16 || j.Kind != Batch || j.QoS != BestEffort || j.GPUs != 0 || j.Deadline != 3*131.96446700507613+300 {
		t.Fatalf("job 0 = %+v", j)
	}
	// Every task has at least 2 instances in 16,511 cases:
	// Σ min(instances_num, 2) = 48,267.
	w2, err := LoadAlibaba2018Batch(p, Alibaba2018Options{MaxInstances: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(w2.Jobs) != 48267 {
		t.Fatalf("MaxInstances 2: %d jobs, want 48267", len(w2.Jobs))
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := LoadAlibabaGPUNodes(filepath.Join(t.TempDir(), "nope.csv")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// parseCase is one malformed input and where the error must point.
type parseCase struct {
	name   string
	input  string
	line   int
	col    int
	colNm  string // expected ParseError.Name
	substr string // expected in Error()
}

func checkParseError(t *testing.T, file string, c parseCase, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", c.name)
		return
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v (%T) is not a *ParseError", c.name, err, err)
		return
	}
	if pe.File != file || pe.Line != c.line || pe.Column != c.col || pe.Name != c.colNm {
		t.Errorf("%s: ParseError{File %q Line %d Column %d Name %q}, want {%q %d %d %q}: %v",
			c.name, pe.File, pe.Line, pe.Column, pe.Name, file, c.line, c.col, c.colNm, err)
	}
	msg := err.Error()
	want := []string{file + ":" + itoa(int64(c.line)) + ":", c.substr}
	if c.col > 0 {
		want = append(want, "column "+itoa(int64(c.col)))
	}
	if c.colNm != "" {
		want = append(want, "("+c.colNm+")")
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error %q lacks %q", c.name, msg, w)
		}
	}
}

const nodesHeader = "sn,cpu_milli,memory_mib,gpu,model\n"

func TestReadAlibabaGPUNodesErrors(t *testing.T) {
	ok := "n0,32000,262144,4,T4\n"
	cases := []parseCase{
		{"bad number", nodesHeader + ok + "n1,abc,262144,0,\n", 3, 2, "cpu_milli", `"abc" is not an integer`},
		{"fraction", nodesHeader + ok + "n1,32000.5,262144,0,\n", 3, 2, "cpu_milli", "not an integer"},
		{"negative memory", nodesHeader + "n1,32000,-1,0,\n", 2, 3, "memory_mib", "-1 outside"},
		{"too many GPUs", nodesHeader + "n1,32000,1024,17,T4\n", 2, 4, "gpu", "17 outside [0, 16]"},
		{"negative GPUs", nodesHeader + "n1,32000,1024,-2,T4\n", 2, 4, "gpu", "outside"},
		{"GPUs without model", nodesHeader + ok + "n1,32000,1024,2, \n", 3, 5, "model", "no model"},
		{"duplicate name", nodesHeader + ok + ok, 3, 1, "sn", "first on line 2"},
		{"empty name", nodesHeader + ",1,1,0,\n", 2, 1, "sn", "empty node name"},
		{"no CPU", nodesHeader + "n1,0,1024,0,\n", 2, 2, "cpu_milli", "no CPU"},
		{"no memory", nodesHeader + "n1,1000,0,0,\n", 2, 3, "memory_mib", "no memory"},
		{"empty CPU", nodesHeader + "n1,,1024,0,\n", 2, 2, "cpu_milli", `"" is not an integer`},
		{"missing column", "sn,cpu_milli,memory_mib,gpu\nn0,1,1,0\n", 1, 0, "", `header lacks column "model"`},
		{"wrong field count", nodesHeader + ok + "n1,32000,262144,0\n", 3, 1, "", "wrong number of fields"},
		{"bare quote", nodesHeader + "n\"1,32000,262144,0,\n", 2, 2, "", "bare \""},
		{"empty file", "", 1, 0, "", "empty file"},
		{"header only", nodesHeader, 1, 0, "", "no nodes"},
		// A quoted name spanning lines 2-3: the next record starts on line 4.
		{"multi-line record", nodesHeader + "\"n\n0\",32000,262144,0,\nn1,-5,1024,0,\n", 4, 2, "cpu_milli", "-5 outside"},
		{"field on second line of a record", nodesHeader + "\"n\n0\",x,262144,0,\n", 3, 2, "cpu_milli", `"x"`},
	}
	for _, c := range cases {
		_, err := ReadAlibabaGPUNodes("nodes.csv", strings.NewReader(c.input))
		checkParseError(t, "nodes.csv", c, err)
	}
}

func TestReadAlibabaGPUNodesValid(t *testing.T) {
	// BOM, CRLF, extra column, integral float, spaces.
	in := "\ufeffsn,cpu_milli,memory_mib,gpu,model,extra\r\n" +
		"a,96000.0,1024, 8 ,V100M32,x\r\n" +
		"b,1000,2048,0,T4,y\r\n"
	c, err := ReadAlibabaGPUNodes("nodes.csv", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Machines[0], c.Machines[1]
	if a.CPU != 96000 || a.GPUs != 8 || a.GPUModel != "V100M32" || len(a.GPUGroup) != 8 {
		t.Fatalf("a = %+v", a)
	}
	// A model on a machine without GPUs is dropped.
	if b.GPUs != 0 || b.GPUModel != "" || !slices.Equal(c.Models, []string{"V100M32"}) {
		t.Fatalf("b = %+v, models %v", b, c.Models)
	}
}

const podsHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

func TestReadAlibabaGPUPodsErrors(t *testing.T) {
	ok := "p0,1000,1024,1,500,,LS,Running,10,100,10\n"
	cases := []parseCase{
		{"unknown QoS", podsHeader + ok + "p1,1000,1024,1,500,,XX,Running,10,100,10\n", 3, 7, "qos", `unknown QoS class "XX"`},
		{"deletion before scheduling", podsHeader + "p1,1000,1024,1,500,,BE,Running,10,15,20\n", 2, 10, "deletion_time", "before the pod started"},
		{"deletion before creation", podsHeader + "p1,1000,1024,1,500,,BE,Pending,10,5,\n", 2, 10, "deletion_time", "before the pod started"},
		{"scheduled before creation", podsHeader + "p1,1000,1024,1,500,,BE,Running,10,15,5\n", 2, 11, "scheduled_time", "before creation_time"},
		{"negative creation", podsHeader + "p1,1000,1024,1,500,,BE,Pending,-1,5,\n", 2, 9, "creation_time", "negative time"},
		{"NaN creation", podsHeader + "p1,1000,1024,1,500,,BE,Running,NaN,5,5\n", 2, 9, "creation_time", "not a finite number"},
		{"infinite deletion", podsHeader + "p1,1000,1024,1,500,,BE,Running,1,1e400,5\n", 2, 10, "deletion_time", "not a finite number"},
		{"bad scheduled", podsHeader + "p1,1000,1024,1,500,,BE,Running,1,10,x\n", 2, 11, "scheduled_time", `"x"`},
		{"zero milli", podsHeader + "p1,1000,1024,1,0,,BE,Running,1,10,1\n", 2, 5, "gpu_milli", "gpu_milli 0"},
		{"multi-GPU share", podsHeader + "p1,1000,1024,2,500,,BE,Running,1,10,1\n", 2, 5, "gpu_milli", "multi-GPU pods take whole GPUs"},
		{"too many GPUs", podsHeader + "p1,1000,1024,17,1000,,BE,Running,1,10,1\n", 2, 4, "num_gpu", "outside"},
		{"negative CPU", podsHeader + "p1,-1,1024,0,0,,BE,Running,1,10,1\n", 2, 2, "cpu_milli", "-1 outside"},
		{"bad memory", podsHeader + "p1,1,1k,0,0,,BE,Running,1,10,1\n", 2, 3, "memory_mib", `"1k" is not an integer`},
		{"empty model in spec", podsHeader + "p1,1,1,1,100,T4||V100M16,BE,Running,1,10,1\n", 2, 6, "gpu_spec", "empty model"},
		{"missing column", strings.Replace(podsHeader, ",qos", "", 1) + "p1,1,1,1,100,,Running,1,10,1\n", 1, 0, "", `header lacks column "qos"`},
		{"wrong field count", podsHeader + ok + "p1,1,1,1,100,,BE,Running,1,10\n", 3, 1, "", "wrong number of fields"},
		{"header only", podsHeader, 1, 0, "", "no pods"},
	}
	for _, c := range cases {
		_, err := ReadAlibabaGPUPods("pods.csv", strings.NewReader(c.input), GPUTraceOptions{Compress: 1})
		checkParseError(t, "pods.csv", c, err)
	}
	// A bad option is an error, but not a ParseError of the file.
	for _, cmp := range []float64{0, -1} {
		_, err := ReadAlibabaGPUPods("pods.csv", strings.NewReader(podsHeader+ok), GPUTraceOptions{Compress: cmp})
		var pe *ParseError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("Compress %v: error %v", cmp, err)
		}
	}
}

func TestReadAlibabaGPUPodsValid(t *testing.T) {
	in := podsHeader +
		"late,1000,1024,1,1500,,BE,Running,100,300,120\n" + // clamped to 1000 milli
		"cpu,2000,2048,0,300,,Guaranteed,Running,20,40,20\n" + // CPU-only: milli dropped
		"spec,3000,4096,1,250,T4|V100M16,LS,Pending,20,50,\n" + // same arrival: file order kept
		"zero,1,1,4,1000,,Burstable,Running,0,0,0\n" // zero duration -> 1 s (after compression)
	w, err := ReadAlibabaGPUPods("pods.csv", strings.NewReader(in), GPUTraceOptions{Compress: 2})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, j := range w.Jobs {
		names = append(names, j.Name)
	}
	if !slices.Equal(names, []string{"zero", "cpu", "spec", "late"}) {
		t.Fatalf("order %v, want [zero cpu spec late]", names)
	}
	j := w.Jobs[3] // late: arrival 100/2, duration (300-120)/2
	if j.ID != 3 || j.GPUMilli != 1000 || j.GPUs != 1 || j.IsShare() || j.Arrival != 50 || j.Duration != 90 || j.Kind != Batch || j.Deadline != 3*90+300 {
		t.Fatalf("late = %+v", j)
	}
	if j = w.Jobs[1]; j.GPUs != 0 || j.GPUMilli != 0 || j.QoS != Guaranteed || j.Arrival != 10 || j.Duration != 10 {
		t.Fatalf("cpu = %+v", j)
	}
	if j = w.Jobs[2]; !slices.Equal(j.GPUModels, []string{"T4", "V100M16"}) || j.Kind != Service || j.LatencySLO != 60 || j.Duration != 15 {
		t.Fatalf("spec = %+v", j)
	}
	if j = w.Jobs[0]; j.Duration != 1 || j.Kind != Training || j.Migratable {
		t.Fatalf("zero = %+v", j)
	}
	// A custom SLA policy replaces the default.
	w, err = ReadAlibabaGPUPods("pods.csv", strings.NewReader(in), GPUTraceOptions{Compress: 1, SLA: SLAPolicy{DeadlineFactor: 2, DeadlineGrace: 1, ServiceWait: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Jobs[3].Deadline != 2*180+1 || w.Jobs[2].LatencySLO != 7 {
		t.Fatalf("custom SLA: deadline %v SLO %v, want 361 7", w.Jobs[3].Deadline, w.Jobs[2].LatencySLO)
	}
}

func TestReadAlibaba2018MachinesErrors(t *testing.T) {
	ok := "m_1,0,219,17,96,100,USING\n"
	cases := []parseCase{
		{"bad rack", ok + "m_2,0,abc,17,96,100,USING\n", 2, 3, "failure_domain_1", `"abc" is not an integer`},
		{"negative leaf", ok + "m_2,0,1,-1,96,100,USING\n", 2, 4, "failure_domain_2", "-1 outside"},
		{"no CPU", "m_2,0,1,1,0,100,USING\n", 1, 5, "cpu_num", "no CPU"},
		{"no memory", "m_2,0,1,1,96,0,USING\n", 1, 6, "mem_size", "0 must be > 0"},
		{"NaN memory", "m_2,0,1,1,96,NaN,USING\n", 1, 6, "mem_size", "not a finite number"},
		{"bad time", ok + ok + "m_2,x,1,1,96,100,USING\n", 3, 2, "time_stamp", `"x"`},
		{"empty id", ok + " ,0,1,1,96,100,USING\n", 2, 1, "machine_id", "empty machine id"},
		// Errors in repeated rows of a known machine are still errors.
		{"bad repeat", ok + "m_1,5,219,17,96,-3,USING\n", 2, 6, "mem_size", "must be > 0"},
		{"wrong field count", ok + "m_2,0,1,1,96,100\n", 2, 1, "", "wrong number of fields"},
		{"empty input", "", 1, 0, "", "no machines"},
	}
	for _, c := range cases {
		_, err := ReadAlibaba2018Machines("machine_meta.csv", strings.NewReader(c.input), Alibaba2018Options{})
		checkParseError(t, "machine_meta.csv", c, err)
	}
}

// TestReadAlibaba2018MachinesMemRange: mem_size has no upper bound
// (traces.go, ReadAlibaba2018Machines: only "mem <= 0" is rejected), and
// int64(mem / 100 * MemMiB) overflows for large values: 1e30 silently
// becomes a 1 MiB machine (the overflowed conversion is negative on amd64,
// then max(m.mem, 1)). It should be a ParseError on column 6.
func TestReadAlibaba2018MachinesMemRange(t *testing.T) {
	c := parseCase{"huge memory", "m_1,0,1,1,96,1e30,USING\n", 1, 6, "mem_size", "1e+30"}
	_, err := ReadAlibaba2018Machines("machine_meta.csv", strings.NewReader(c.input), Alibaba2018Options{})
	checkParseError(t, "machine_meta.csv", c, err)
}

func TestReadAlibaba2018MachinesValid(t *testing.T) {
	in := "m_1,0,10,1,96,100,USING\n" +
		"m_2,0,11,1,64,50,USING\n" +
		"m_1,5,99,99,1,1,USING\n" + // repeat: the first row wins
		"m_3,0,10,2,96,25.5,IMPORT_INSTALLING\n" // rack 10's leaf stays fd2 1
	c, err := ReadAlibaba2018Machines("machine_meta.csv", strings.NewReader(in), Alibaba2018Options{MemMiB: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Machines) != 3 || len(c.Racks) != 2 || len(c.Leaves) != 1 || len(c.Zones) != 1 {
		t.Fatalf("%d machines %d racks %d leaves %d zones, want 3 2 1 1", len(c.Machines), len(c.Racks), len(c.Leaves), len(c.Zones))
	}
	m1, m2, m3 := c.Machines[0], c.Machines[1], c.Machines[2]
	if m1.CPU != 96000 || m1.Mem != 1000 || m2.CPU != 64000 || m2.Mem != 500 || m3.Mem != 255 {
		t.Fatalf("machines %+v %+v %+v", m1, m2, m3)
	}
	if m1.Rack != m3.Rack || m1.Rack == m2.Rack || c.Hops(0, 2) != 1 || c.Hops(0, 1) != 2 {
		t.Fatalf("racks %d %d %d, hops %d %d", m1.Rack, m2.Rack, m3.Rack, c.Hops(0, 2), c.Hops(0, 1))
	}
	if c.Racks[m1.Rack].Name != "fd1-10" || c.Leaves[0].Name != "fd2-1" || !slices.Equal(c.Racks[m1.Rack].Machines, []int{0, 2}) {
		t.Fatalf("racks %+v leaves %+v", c.Racks, c.Leaves)
	}
}

const batchHeader = ",submit_time,duration,cpu,memory,job_id,task_id,instances_num,disk\n"

func TestReadAlibaba2018BatchErrors(t *testing.T) {
	ok := "0,539,116.5,1.0,0.005,1,1,3,0\n"
	cases := []parseCase{
		{"negative submit", batchHeader + ok + "1,-1,1,1,0.1,1,2,1,0\n", 3, 2, "submit_time", "negative time"},
		{"bad submit", batchHeader + "1,x,1,1,0.1,1,2,1,0\n", 2, 2, "submit_time", `"x"`},
		{"negative duration", batchHeader + "1,0,-0.5,1,0.1,1,2,1,0\n", 2, 3, "duration", "negative duration"},
		{"bad cpu", batchHeader + "1,0,1,abc,0.1,1,2,1,0\n", 2, 4, "cpu", `"abc"`},
		{"huge cpu", batchHeader + "1,0,1,2e6,0.1,1,2,1,0\n", 2, 4, "cpu", "outside [0, 1e6]"},
		{"memory above 1", batchHeader + "1,0,1,1,1.5,1,2,1,0\n", 2, 5, "memory", "outside [0, 1]"},
		{"negative job", batchHeader + "1,0,1,1,0.1,-1,2,1,0\n", 2, 6, "job_id", "-1 outside"},
		{"fractional job", batchHeader + "1,0,1,1,0.1,1.5,2,1,0\n", 2, 6, "job_id", "not an integer"},
		{"bad task", batchHeader + "1,0,1,1,0.1,1,t,1,0\n", 2, 7, "task_id", `"t"`},
		{"no instances", batchHeader + "1,0,1,1,0.1,1,2,0,0\n", 2, 8, "instances_num", "no instances"},
		{"missing column", strings.Replace(batchHeader, ",task_id", "", 1) + "1,0,1,1,0.1,1,1,0\n", 1, 0, "", `header lacks column "task_id"`},
		{"wrong field count", batchHeader + ok + "1,0,1,1,0.1,1,2,1\n", 3, 1, "", "wrong number of fields"},
		{"header only", batchHeader, 1, 0, "", "no tasks"},
	}
	for _, c := range cases {
		_, err := ReadAlibaba2018Batch("jobs.csv", strings.NewReader(c.input), Alibaba2018Options{MaxInstances: 2})
		checkParseError(t, "jobs.csv", c, err)
	}
}

func TestReadAlibaba2018BatchValid(t *testing.T) {
	in := batchHeader +
		"0,600,116.5,1.5,0.25,17,1,3,0\n" +
		"1,100,0.2,0,0,2,5,1,0\n"
	w, err := ReadAlibaba2018Batch("jobs.csv", strings.NewReader(in), Alibaba2018Options{MaxInstances: 2, MemMiB: 1000, Compress: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Task 17/1 is capped at 2 instances; task 2/5 arrives first, and time
	// starts there: task 17/1 arrives at (600-100)/2 = 250.
	if len(w.Jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(w.Jobs))
	}
	j := w.Jobs[0]
	// cpu 0 and memory 0 become the minimum 1; duration 0.1 -> 1 s.
	if j.Name != "j2-t5-i0" || j.Arrival != 0 || j.Duration != 1 || j.CPU != 1 || j.Mem != 1 || j.Tenant != 2 {
		t.Fatalf("job 0 = %+v", j)
	}
	j = w.Jobs[2]
	// 1.5 cores = 1500m; 0.25 x 1000 MiB = 250; 116.5/2 = 58.25 s; tenant 17%16.
	if j.Name != "j17-t1-i1" || j.ID != 2 || j.Arrival != 250 || j.Duration != 58.25 || j.CPU != 1500 || j.Mem != 250 || j.Tenant != 1 || j.Deadline != 3*58.25+300 {
		t.Fatalf("job 2 = %+v", j)
	}
	w, err = ReadAlibaba2018Batch("jobs.csv", strings.NewReader(in), Alibaba2018Options{})
	if err != nil || len(w.Jobs) != 4 {
		t.Fatalf("MaxInstances 0 expands all: %v, %d jobs, want 4", err, len(w.Jobs))
	}
}
