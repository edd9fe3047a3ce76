package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tegrl/tegrl/data"
)

// ThroughputTable is Gavel's measured training throughput (steps/s) of DL
// job types (model and batch size) on GPU types, at scale factors (GPUs
// per job), with the gang on one server (consolidated) or spread over
// servers (the table's "<gpu>_unconsolidated" entries), alone or sharing
// its GPUs with one other job of the same scale factor (space sharing).
//
// The file format is Gavel's simulation_throughputs.json:
//
//	{"v100": {"('ResNet-18 (batch size 16)', 1)": {"null": 50.1,
//	          "('LM (batch size 5)', 1)": [30.2, 12.9], ...}, ...},
//	 "v100_unconsolidated": {...}, ...}
//
// "null" is the throughput alone; a pair key gives [this job's, the other
// job's] throughput when the two share the GPUs. A zero throughput means
// the job cannot run there (for example, out of memory).
type ThroughputTable struct {
	Models []string // job types, sorted by name
	GPUs   []string // GPU types, sorted by name (Gavel: k80, p100, v100)
	Scales []int    // scale factors present, ascending
	// alone[((m*len(Scales)+s)*len(GPUs)+g)*2+spread]
	alone []float64
	// pair[(((g*len(Scales)+s)*len(Models)+a)*len(Models)+b)*2+k]; NaN where
	// the table has no entry.
	pair []float64
}

// MaxScale is the largest scale factor a table may hold.
const MaxScale = 64

// ErrUnknownGPU is returned (wrapped) for a GPU model that is not in the
// throughput table.
var ErrUnknownGPU = errors.New("unknown GPU model")

const spreadSuffix = "_unconsolidated"

var gavelTable struct {
	once sync.Once
	t    *ThroughputTable
	err  error
}

// GavelThroughputTable returns the bundled Gavel table
// (data/gavel/simulation_throughputs.json), parsed once and shared: a
// ThroughputTable is never modified after loading.
func GavelThroughputTable() (*ThroughputTable, error) {
	gavelTable.once.Do(func() {
		r, err := data.Open("gavel/simulation_throughputs.json")
		if err != nil {
			gavelTable.err = fmt.Errorf("gavel throughput table: %w", err)
			return
		}
		defer r.Close()
		gavelTable.t, gavelTable.err = LoadThroughputTable(r)
	})
	return gavelTable.t, gavelTable.err
}

// parseJobKey parses Gavel's "('MODEL', SCALE)" key.
func parseJobKey(k string) (string, int, error) {
	if !strings.HasPrefix(k, "('") || !strings.HasSuffix(k, ")") {
		return "", 0, fmt.Errorf("job type key %q: want ('MODEL', SCALE)", k)
	}
	body := k[2 : len(k)-1]
	i := strings.LastIndex(body, "', ")
	if i <= 0 {
		return "", 0, fmt.Errorf("job type key %q: want ('MODEL', SCALE)", k)
	}
	sc, err := strconv.Atoi(body[i+3:])
	if err != nil || sc < 1 || sc > MaxScale {
		return "", 0, fmt.Errorf("job type key %q: scale factor must be an integer in 1..%d", k, MaxScale)
	}
	return body[:i], sc, nil
}

// maxPairEntries bounds the dense co-location table (job types² × GPU
// types × scale factors; Gavel's: 26² × 3 × 4), so that a table of many
// job types is an error rather than gigabytes of memory.
const maxPairEntries = 1 << 22

func checkTableSize(nm, ns, ng int) error {
	if nm > 1<<12 || ng > 1<<12 || nm*nm*ns*ng > maxPairEntries {
		return fmt.Errorf("throughput table: %d job types × %d GPU types × %d scale factors is too large (at most %d job-type pairs × GPU types × scale factors)",
			nm, ng, ns, maxPairEntries)
	}
	return nil
}

func validThroughput(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

type rawTable map[string]map[string]map[string]json.RawMessage

// LoadThroughputTable parses a throughput table in Gavel's format. Every
// GPU type with an "_unconsolidated" section must also have its own
// section; every entry needs a "null" (alone) throughput; throughputs must
// be finite and non-negative and pair entries two-element arrays.
func LoadThroughputTable(r io.Reader) (*ThroughputTable, error) {
	var raw rawTable
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("throughput table: %w", err)
	}
	if dec.More() {
		return nil, errors.New("throughput table: trailing data after the JSON object")
	}
	t := &ThroughputTable{}
	models, scales := map[string]bool{}, map[int]bool{}
	for w, entries := range raw {
		base := strings.TrimSuffix(w, spreadSuffix)
		if base == "" {
			return nil, fmt.Errorf("throughput table: empty GPU type name %q", w)
		}
		if _, ok := raw[base]; !ok {
			return nil, fmt.Errorf("throughput table: %q without a %q section", w, base)
		}
		if base == w {
			t.GPUs = append(t.GPUs, w)
		}
		for k := range entries {
			m, sc, err := parseJobKey(k)
			if err != nil {
				return nil, fmt.Errorf("throughput table %s: %w", w, err)
			}
			models[m], scales[sc] = true, true
		}
	}
	if len(t.GPUs) == 0 || len(models) == 0 {
		return nil, errors.New("throughput table: no GPU types or no job types")
	}
	for m := range models {
		t.Models = append(t.Models, m)
	}
	for s := range scales {
		t.Scales = append(t.Scales, s)
	}
	sort.Strings(t.GPUs)
	sort.Strings(t.Models)
	sort.Ints(t.Scales)
	nm, ns, ng := len(t.Models), len(t.Scales), len(t.GPUs)
	if err := checkTableSize(nm, ns, ng); err != nil {
		return nil, err
	}
	t.alone = make([]float64, nm*ns*ng*2)
	t.pair = make([]float64, ng*ns*nm*nm*2)
	for i := range t.pair {
		t.pair[i] = math.NaN()
	}
	for w, entries := range raw {
		if err := t.fill(w, entries); err != nil {
			return nil, fmt.Errorf("throughput table %s: %w", w, err)
		}
	}
	return t, nil
}

func (t *ThroughputTable) fill(w string, entries map[string]map[string]json.RawMessage) error {
	base := strings.TrimSuffix(w, spreadSuffix)
	spread := 0
	if base != w {
		spread = 1
	}
	g := sort.SearchStrings(t.GPUs, base)
	for k, row := range entries {
		m, sc, _ := parseJobKey(k)
		mi, si := sort.SearchStrings(t.Models, m), sort.SearchInts(t.Scales, sc)
		alone, ok := row["null"]
		if !ok {
			return fmt.Errorf("%s: no \"null\" (alone) throughput", k)
		}
		var v float64
		if err := json.Unmarshal(alone, &v); err != nil || !validThroughput(v) {
			return fmt.Errorf("%s: alone throughput %s is not a finite non-negative number", k, alone)
		}
		t.alone[((mi*len(t.Scales)+si)*len(t.GPUs)+g)*2+spread] = v
		if spread == 1 {
			continue // pair entries are only used consolidated
		}
		for ok2, pv := range row {
			if ok2 == "null" {
				continue
			}
			m2, sc2, err := parseJobKey(ok2)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			var p []float64
			if err := json.Unmarshal(pv, &p); err != nil || len(p) != 2 || !validThroughput(p[0]) || !validThroughput(p[1]) {
				return fmt.Errorf("%s with %s: want two finite non-negative throughputs, got %s", k, ok2, pv)
			}
			if sc2 != sc {
				continue // Gavel only co-locates jobs of equal scale factor
			}
			b := t.Model(m2)
			if b < 0 {
				return fmt.Errorf("%s: pair with %s, a job type without its own entry", k, ok2)
			}
			at := (((g*len(t.Scales)+si)*len(t.Models)+mi)*len(t.Models) + b) * 2
			t.pair[at], t.pair[at+1] = p[0], p[1]
		}
	}
	return nil
}

// GPU returns the index of a GPU type, or an error wrapping ErrUnknownGPU.
func (t *ThroughputTable) GPU(name string) (int, error) {
	g := sort.SearchStrings(t.GPUs, name)
	if g == len(t.GPUs) || t.GPUs[g] != name {
		return -1, fmt.Errorf("%w %q (the throughput table has %s)", ErrUnknownGPU, name, strings.Join(t.GPUs, ", "))
	}
	return g, nil
}

// Model returns the index of a job type, or -1.
func (t *ThroughputTable) Model(name string) int {
	m := sort.SearchStrings(t.Models, name)
	if m == len(t.Models) || t.Models[m] != name {
		return -1
	}
	return m
}

func (t *ThroughputTable) scaleIndex(scale int) int {
	s := sort.SearchInts(t.Scales, scale)
	if s == len(t.Scales) || t.Scales[s] != scale {
		return -1
	}
	return s
}

// Throughput returns job type m's steps/s at the given scale factor on GPU
// type g, consolidated on one server or spread over servers; 0 where the
// table has no entry or the job cannot run there.
func (t *ThroughputTable) Throughput(m, g, scale int, spread bool) float64 {
	s := t.scaleIndex(scale)
	if s < 0 || m < 0 || m >= len(t.Models) || g < 0 || g >= len(t.GPUs) {
		return 0
	}
	k := 0
	if spread {
		k = 1
	}
	return t.alone[((m*len(t.Scales)+s)*len(t.GPUs)+g)*2+k]
}

// PairThroughput returns the steps/s of job types a and b sharing GPUs of
// type g at the given (common) scale factor; ok is false where the table
// has no entry or either job would not progress.
func (t *ThroughputTable) PairThroughput(a, b, g, scale int) (ta, tb float64, ok bool) {
	s := t.scaleIndex(scale)
	if s < 0 || a < 0 || b < 0 || a >= len(t.Models) || b >= len(t.Models) || g < 0 || g >= len(t.GPUs) {
		return 0, 0, false
	}
	at := (((g*len(t.Scales)+s)*len(t.Models)+a)*len(t.Models) + b) * 2
	ta, tb = t.pair[at], t.pair[at+1]
	if math.IsNaN(ta) || ta <= 0 || tb <= 0 {
		return 0, 0, false
	}
	return ta, tb, true
}

// HasScale reports whether job type m has a measured throughput at scale
// factor scale on some GPU type (Gavel's "distributed" job types are those
// with entries above 1).
func (t *ThroughputTable) HasScale(m, scale int) bool {
	for g := range t.GPUs {
		if t.Throughput(m, g, scale, false) > 0 {
			return true
		}
	}
	return false
}
