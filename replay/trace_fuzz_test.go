package replay

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
)

// validRunConfig is a run configuration as RecordRun writes it.
func validRunConfig(t testing.TB) []byte {
	c, err := env.NewSyntheticCluster(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := &env.Workload{Name: "w"}
	rc := datasets.NewRunConfig(c, w, newSched(t, "fgd"), datasets.RecordConfig{Sim: env.SimConfig{Seed: 3, Duration: 60, MTBF: -1}})
	b, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParseRunConfig: the record.run metadata decoder never panics, and
// what it accepts re-encodes to a configuration it accepts again.
func FuzzParseRunConfig(f *testing.F) {
	valid := validRunConfig(f)
	f.Add(valid)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":1,"scheduler":"fgd","tick_s":-1}`))
	f.Add(bytes.Replace(valid, []byte(`"version":1`), []byte(`"version":2`), 1))
	f.Add(bytes.Replace(valid, []byte(`"seed":3`), []byte(`"seed":3,"extra":1`), 1))
	f.Add(append(bytes.Clone(valid), '{'))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseRunConfig(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("accepted %q, which does not re-encode: %v", b, err)
		}
		if _, err := ParseRunConfig(again); err != nil {
			t.Fatalf("accepted %q, but not its re-encoding %q: %v", b, again, err)
		}
	})
}

// FuzzParseRunSummary: the run.json decoder never panics, and what it
// accepts has compact JSON objects for the run and the metrics.
func FuzzParseRunSummary(f *testing.F) {
	m, _ := json.Marshal(env.Metrics{Scheduler: "fgd", MeanJCTS: 1.5})
	valid := []byte(`{"run":` + string(validRunConfig(f)) + `,"transitions":12,"metrics":` + string(m) + "}\n")
	f.Add(valid)
	f.Add([]byte(`{"run":{},"transitions":-1,"metrics":{}}`))
	f.Add([]byte(`{"run": {"a": 1}, "transitions": 0, "metrics": {"scheduler": "x"}}`))
	f.Add([]byte(`{"run":{},"metrics":{}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseRunSummary(b)
		if err != nil {
			return
		}
		for _, part := range [][]byte{s.Run, s.Metrics} {
			var buf bytes.Buffer
			if err := json.Compact(&buf, part); err != nil || !bytes.Equal(buf.Bytes(), part) {
				t.Fatalf("%q: part %q is not compact JSON (%v)", b, part, err)
			}
		}
		if s.Transitions < 0 {
			t.Fatalf("%q: negative count accepted", b)
		}
	})
}
