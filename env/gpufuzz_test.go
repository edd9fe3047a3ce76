package env

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// Fuzz tests for the decoders of outside input about GPU clusters: each
// either returns an error or a value that keeps its invariants, and never
// panics. `go test` runs the seeds; `go test -fuzz FuzzX` searches further.

func FuzzParseGPUClusterSpec(f *testing.F) {
	tab, err := GavelThroughputTable()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"36:36:36", "8:0:4", "v100=4,k80=8", " v100 = 4 , p100=0", "0:0:0", "-1:2:2",
		"1:1", "v100=2,v100=2", "=3", "v100=", ":::", "9223372036854775807:1:1", "1048576:1:0", "a100=4"} {
		for _, per := range []int{1, 4, 0} {
			f.Add(s, per)
		}
	}
	f.Fuzz(func(t *testing.T, spec string, per int) {
		c, err := ParseGPUClusterSpec(spec, tab, per)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		total := 0
		for i, g := range c.Types {
			if c.Capacity[i] <= 0 || c.Capacity[i]%c.GPUsPerServer[i] != 0 || g < 0 || g >= len(tab.GPUs) {
				t.Fatalf("%q: type %d capacity %d per server %d", spec, g, c.Capacity[i], c.GPUsPerServer[i])
			}
			total += c.Capacity[i]
		}
		if total != c.TotalGPUs() || total < 1 || total > MaxClusterGPUs {
			t.Fatalf("%q: %d GPUs", spec, total)
		}
		if total <= 4096 {
			if _, err := NewRoundSim(c, &FIFO{}, &sliceJobs{}, RoundConfig{}); err != nil {
				t.Fatalf("%q: %v", spec, err)
			}
		}
	})
}

func FuzzPhillyDistribution(f *testing.F) {
	for _, s := range []string{
		"duration_s,num_gpus\n3600,1\n60.5,8\n", "duration_s,num_gpus\n", "", "duration_s,num_gpus\nNaN,1\n",
		"duration_s,num_gpus\nInf,1\n", "duration_s,num_gpus\n1e400,1\n", "duration_s,num_gpus\n10,65\n",
		"duration_s,num_gpus\n10,\"1\n", "duration_s,num_gpus,x\n1,1,1\n", "\ufeffduration_s,num_gpus\n1,1\n",
	} {
		f.Add([]byte(s))
	}
	tab, err := GavelThroughputTable()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := LoadPhillyDistribution(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(ps) == 0 {
			t.Fatal("no samples and no error")
		}
		for _, p := range ps {
			if !(p.Duration > 0) || math.IsInf(p.Duration, 0) || p.GPUs < 1 || p.GPUs > MaxScale {
				t.Fatalf("accepted %+v", p)
			}
		}
		// A generator either rejects the samples (scale factors the table
		// lacks) or draws jobs from them.
		g, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 1, Philly: ps})
		if err != nil {
			return
		}
		for range 3 {
			if j := g.Next(); j.Scale < 1 || !(j.Steps > 0) {
				t.Fatalf("job %+v", j)
			}
		}
	})
}

func FuzzNodeList(f *testing.F) {
	for _, s := range []string{
		"model,gpu\nV100M16,8\nT4,2\nCPU,0\n", "model,gpu\n", "", "gpu,model\n8,G1\n", "model,gpu\nT4,x\n",
		"model,gpu\n,2\n", "model,gpu\nT4,1025\n", "model,gpu\nH100,8\n", "model,gpu,x\nT4,1\n", "model\nT4\n",
	} {
		f.Add([]byte(s))
	}
	tab, err := GavelThroughputTable()
	if err != nil {
		f.Fatal(err)
	}
	gm := BundledGPUModels()
	f.Fuzz(func(t *testing.T, b []byte) {
		servers, err := readNodeCSV(bytes.NewReader(b), "model", "gpu")
		if err != nil {
			return
		}
		for _, s := range servers {
			if s.GPUs < 0 || (s.GPUs > 0 && s.Model == "") {
				t.Fatalf("accepted %+v", s)
			}
		}
		sc, err := NewServerCluster("fuzz", tab, gm, servers, 0)
		if err != nil {
			return
		}
		for i := range sc.Cluster.Types {
			n := 0
			for _, k := range sc.Servers[i] {
				n += k
			}
			if n != sc.Cluster.Capacity[i] {
				t.Fatalf("type %d: servers hold %d GPUs, capacity %d", i, n, sc.Cluster.Capacity[i])
			}
		}
	})
}

// TestThroughputTableMalformed: more malformed tables, each a clear error.
func TestThroughputTableMalformed(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"v100": {`)
	for i := range 3000 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`"('M` + strconv.Itoa(i) + `', ` + []string{"1", "2", "4", "8"}[i%4] + `)": {"null": 1}`)
	}
	many.WriteString(`}}`)
	for _, c := range []struct{ in, want string }{
		{``, "throughput table: EOF"},
		{`{"v100": {"('M', 1)": {"null": 1}}} {}`, "trailing data"},
		{`{"v100": {"('M', 1)": {"null": 1}}`, "unexpected EOF"},
		{`{"v100": {"('M', 1)": {"null": 1e999}}}`, "throughput table"},
		{`{"v100": {"('M', 1)": null}}`, `no "null"`},
		{`{"v100": {"('M', 65)": {"null": 1}}}`, "1..64"},
		{`{"v100": {"('M', 1)": {"null": 1, "('M', 1)": [1, 2, 3]}}}`, "two finite"},
		{`{"v100": {"('M', 1)": {"null": 1, "('M', 1)": [1, -2]}}}`, "two finite"},
		{`{"_unconsolidated": {}}`, "empty GPU type name"},
		{`{"v100": {"()": {"null": 1}}}`, "want ('MODEL', SCALE)"},
		{`{"v100": {"('', 1)": {"null": 1}}}`, "want ('MODEL', SCALE)"},
	} {
		_, err := LoadThroughputTable(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want it to mention %q", c.in, err, c.want)
		}
	}
	_, err := LoadThroughputTable(strings.NewReader(many.String()))
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("many job types: error %v, want too large", err)
	}
}

// TestUnknownGPUModel: a GPU model outside the table and the mapping is an
// error wrapping ErrUnknownGPU, naming the model and what is known, from
// every place that takes one.
func TestUnknownGPUModel(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"spec", func() error { _, err := ParseGPUClusterSpec("h100=8", tab, 1); return err }()},
		{"spec, spaces", func() error { _, err := ParseGPUClusterSpec(" a100 = 8 ", tab, 1); return err }()},
		{"counts", func() error { _, err := NewGPUCluster(tab, map[string]int{"V100": 4}, 1); return err }()},
		{"reference", func() error {
			_, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 1, Reference: "t4"})
			return err
		}()},
		{"node list", func() error {
			_, err := NewServerCluster("n", tab, BundledGPUModels(), []NodeServer{{Model: "Imaginary-9000", GPUs: 8}}, 0)
			return err
		}()},
	} {
		if !errors.Is(c.err, ErrUnknownGPU) {
			t.Errorf("%s: error %v, want ErrUnknownGPU", c.name, c.err)
			continue
		}
		if msg := c.err.Error(); !strings.Contains(msg, "unknown GPU model") || !(strings.Contains(msg, "k80, p100, v100") || strings.Contains(msg, "mapping has")) {
			t.Errorf("%s: error %q does not name the known models", c.name, msg)
		}
	}
	// Spaces around a type=count field are allowed.
	if c, err := ParseGPUClusterSpec(" v100 = 4 , k80=2", tab, 1); err != nil || c.String() != "k80=2,v100=4" {
		t.Errorf("spaced spec: %v %v", c, err)
	}
	if _, err := ParseGPUClusterSpec("v100=1048576,k80=1", tab, 1); err == nil || !strings.Contains(err.Error(), "more than 1048576 GPUs") {
		t.Errorf("huge cluster: %v", err)
	}
}
