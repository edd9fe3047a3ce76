package datasets

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/tegrl/tegrl/env"
)

// jsSummary is what testdata/check_arrow.cjs prints for one file.
type jsSummary struct {
	File         string            `json:"file"`
	Kind         string            `json:"kind"`
	Hash         string            `json:"observation_schema_hash"`
	Rows         int64             `json:"rows"`
	Batches      int               `json:"batches"`
	Fields       []string          `json:"fields"`
	FirstStrings map[string]string `json:"first_strings"`
	Columns      []struct {
		Name  string   `json:"name"`
		Count int64    `json:"count"`
		Nulls int64    `json:"nulls"`
		NaNs  int64    `json:"nans"`
		Infs  int64    `json:"infs"`
		Min   *float64 `json:"min"`
		Max   *float64 `json:"max"`
		Sum   float64  `json:"sum"`
	} `json:"columns"`
}

// vendoredArrowSHA256 is the SHA-256 of the apache-arrow bundle under
// testdata/node_modules: Arrow.es2015.min.js from the npm registry's
// apache-arrow-21.2.0.tgz (integrity sha512-Hxe6Agq26gQOM954qpzYSllJBPJl+e16U5CkfuMUhLrNba+5nKkttIVlflaovN6oaTratqMGAO8H5u/aNhmHWQ==),
// unmodified. The project downloads nothing but Go modules, so the second
// Arrow implementation travels with the test; node resolves it from the
// checker's own folder.
const vendoredArrowSHA256 = "4bb22da0967f403eea39bc51820552e729ed1ad3e50c2568fb43d818bc1ca4d0"

// nodeWithArrow finds node, or skips, and checks that the checker parses
// and that the vendored apache-arrow bundle is the released one.
func nodeWithArrow(t *testing.T) (node string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found; skipping the Arrow interoperability check")
	}
	if out, err := exec.Command(node, "--check", filepath.Join("testdata", "check_arrow.cjs")).CombinedOutput(); err != nil {
		t.Fatalf("testdata/check_arrow.cjs: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "node_modules", "apache-arrow", "Arrow.es2015.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != vendoredArrowSHA256 {
		t.Fatalf("testdata/node_modules/apache-arrow/Arrow.es2015.min.js has SHA-256 %x, want apache-arrow 21.2.0's %s", sum, vendoredArrowSHA256)
	}
	return node
}

// TestArrowJSInterop writes one file of each kind and has apache-arrow
// read them: metadata, row counts, field names, and per-column statistics
// must match what the Go reader computes.
func TestArrowJSInterop(t *testing.T) {
	node := nodeWithArrow(t)
	dir := t.TempDir()
	c := testCluster(t, 40, 6)
	w := testWorkload(t, c, 900, 6)
	w.Jobs[0].GPUModels = []string{"A100", "T4"}
	sched, _ := env.NewScheduler("fgd")
	if _, err := RecordRun(context.Background(), dir, c, w, sched, RecordConfig{RunID: "interop", Sim: env.SimConfig{Seed: 6, Duration: 900}, Writer: WriterOptions{BatchRows: 16}}); err != nil {
		t.Fatal(err)
	}
	uw, err := CreateUsage(filepath.Join(dir, UsageFile), WriterOptions{BatchRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	nan := float32(math.NaN())
	for i := 0; i < 10; i++ {
		u := UsageSample{Machine: "m_" + string(rune('a'+i%3)), Time: int64(i * 10), CPUUtil: float32(i), MemUtil: 50, MemGPS: nan, MKPI: float32(i % 2), NetIn: 1.5, NetOut: 2.25, DiskIO: nan}
		if i%4 == 0 {
			u.DiskIO = 7
		}
		if err := uw.Append(&u); err != nil {
			t.Fatal(err)
		}
	}
	if err := uw.Close(); err != nil {
		t.Fatal(err)
	}
	files := []string{MachinesFile, JobsFile, TransitionsFile, UsageFile}
	args := []string{filepath.Join("testdata", "check_arrow.cjs")}
	for _, f := range files {
		args = append(args, filepath.Join(dir, f))
	}
	cmd := exec.Command(node, args...)
	// Only the vendored package: a NODE_PATH of the caller's must not
	// bring another version.
	cmd.Env = append(os.Environ(), "NODE_PATH=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	k := 0
	for ; sc.Scan(); k++ {
		var js jsSummary
		if err := json.Unmarshal(sc.Bytes(), &js); err != nil {
			t.Fatalf("node output %d: %v", k, err)
		}
		compareJS(t, filepath.Join(dir, files[k]), &js)
	}
	if k != len(files) {
		t.Fatalf("node printed %d summaries, want %d", k, len(files))
	}
}

func compareJS(t *testing.T, path string, js *jsSummary) {
	t.Helper()
	s, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	if js.Kind != s.Kind || js.Hash != s.SchemaHash || js.Rows != s.Rows || js.Batches != s.Batches {
		t.Fatalf("%s: apache-arrow sees kind %q hash %q, %d rows in %d batches; Go %q %q, %d in %d",
			name, js.Kind, js.Hash, js.Rows, js.Batches, s.Kind, s.SchemaHash, s.Rows, s.Batches)
	}
	if len(js.Fields) != len(s.Fields) {
		t.Fatalf("%s: %d fields in JS, %d in Go", name, len(js.Fields), len(s.Fields))
	}
	for i, f := range s.Fields {
		if js.Fields[i] != f.Name {
			t.Fatalf("%s: field %d is %q in JS, %q in Go", name, i, js.Fields[i], f.Name)
		}
	}
	if len(js.Columns) != len(s.Columns) {
		t.Fatalf("%s: %d numeric columns in JS, %d in Go", name, len(js.Columns), len(s.Columns))
	}
	for i, g := range s.Columns {
		j := js.Columns[i]
		if j.Name != g.Name || j.Count != g.Count || j.Nulls != g.Nulls || j.NaNs != g.NaNs || j.Infs != g.Infs {
			t.Fatalf("%s: column %s: JS count %d nulls %d NaNs %d Infs %d; Go %d %d %d %d",
				name, g.Name, j.Count, j.Nulls, j.NaNs, j.Infs, g.Count, g.Nulls, g.NaNs, g.Infs)
		}
		finite := g.Finite
		if finite == 0 {
			continue
		}
		if j.Min == nil || j.Max == nil || *j.Min != g.Min || *j.Max != g.Max {
			t.Fatalf("%s: column %s: JS min %v max %v; Go %v %v", name, g.Name, j.Min, j.Max, g.Min, g.Max)
		}
		sum := g.Mean * float64(finite)
		if math.Abs(j.Sum-sum) > 1e-9*math.Max(1, math.Abs(sum)) {
			t.Fatalf("%s: column %s: JS sum %v, Go %v", name, g.Name, j.Sum, sum)
		}
	}
	// First value of each string column, from the Go reader's batches.
	br, err := openPath(path, "", nil, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer br.close()
	rec, err := br.nextBatch()
	if err != nil {
		t.Fatal(err)
	}
	for i, col := range rec.Columns() {
		if sc, ok := col.(*array.String); ok {
			want := sc.Value(0)
			if got := js.FirstStrings[rec.ColumnName(i)]; got != want {
				t.Fatalf("%s: column %s row 0: JS %q, Go %q", name, rec.ColumnName(i), got, want)
			}
		}
	}
}
