package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tableRound is a round of n single-GPU jobs of random job types of the
// bundled table on GPU types v100, p100 and k80 (counts given), with the
// table's pair throughputs.
func tableRound(t testing.TB, n int, counts []int, seed uint64) *RoundState {
	t.Helper()
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"v100", "p100", "k80"}
	gs := make([]int, len(names))
	for i, name := range names {
		if gs[i], err = tab.GPU(name); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	s := &RoundState{Time: 36000, Types: names, Capacity: counts}
	for i := range n {
		m := rng.IntN(len(tab.Models))
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Type: m, Scale: 1, Priority: 1, Arrival: float64(300 * i), StepsTotal: 1e6,
			StepsLeft: 1e6 * rng.Float64(), Attained: float64(600 * (n - i))})
		for _, g := range gs {
			s.Throughput = append(s.Throughput, tab.Throughput(m, g, 1, false))
		}
	}
	s.Pair = func(a, b, j int) (float64, float64, bool) {
		return tab.PairThroughput(s.Jobs[a].Type, s.Jobs[b].Type, gs[j], 1)
	}
	return s
}

// fullSupport names every column of the table on v100, p100 and k80.
func fullSupport(t testing.TB) *ColumnSupport {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	var cols []SupportColumn
	for _, g := range []string{"v100", "p100", "k80"} {
		for a, ma := range tab.Models {
			cols = append(cols, SupportColumn{A: ma, GPU: g})
			for _, mb := range tab.Models[a:] {
				cols = append(cols, SupportColumn{A: ma, B: mb, GPU: g})
			}
		}
	}
	s, err := NewColumnSupport(tab, cols)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func allocPacked(t *testing.T, p *MaxMinFairnessPacked, s *RoundState) ([]float64, []RoundPair) {
	t.Helper()
	x := make([]float64, len(s.Throughput))
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	var pairs []RoundPair
	for _, pr := range p.Pairs(s) {
		pairs = append(pairs, RoundPair{A: pr.A, B: pr.B, X: slices.Clone(pr.X)})
	}
	return x, pairs
}

// writeSupport writes the default tiered parameters with support sup
// as a policy file and returns its bytes.
func writeSupport(t *testing.T, sup *ColumnSupport) []byte {
	t.Helper()
	w, r := DefaultTieredParams(false)
	path := t.TempDir() + "/s.json"
	if err := WriteTieredPolicy(path, &TieredPackedPolicy{Weights: w, LogRatio: r, Support: sup}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSupportRestrictsLP: a support of every column is the teacher's LP,
// byte for byte; the teacher's own used columns give the same
// allocation; an empty support keeps each class its fastest type alone
// and pairs nothing; Used lists exactly the positive columns.
func TestSupportRestrictsLP(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(6) {
		s := tableRound(t, 30, []int{4, 4, 4}, seed)
		teacher := &MaxMinFairnessPacked{TieDeficit: 5}
		x0, p0 := allocPacked(t, teacher, s)
		if len(p0) == 0 {
			t.Fatalf("seed %d: the teacher pairs no jobs", seed)
		}
		// Used: every positive share and pair has its column.
		used := map[UsedColumn]bool{}
		for _, u := range teacher.Used() {
			used[u] = true
		}
		for i, j := range s.Jobs {
			for k := range s.Types {
				if x0[i*3+k] > 0 && !used[UsedColumn{A: j.Type, B: -1, GPU: k}] {
					t.Fatalf("seed %d: job %d's share on %s has no used column", seed, j.ID, s.Types[k])
				}
			}
		}
		var names []SupportColumn
		for u := range used {
			c := SupportColumn{A: tab.Models[u.A], GPU: s.Types[u.GPU]}
			if u.B >= 0 {
				c.B = tab.Models[u.B]
			}
			names = append(names, c)
		}
		own, err := NewColumnSupport(tab, names)
		if err != nil {
			t.Fatal(err)
		}
		for name, sup := range map[string]*ColumnSupport{"every column": fullSupport(t), "the columns it used": own} {
			x, p := allocPacked(t, &MaxMinFairnessPacked{TieDeficit: 5, Support: sup}, s)
			if name == "every column" && (!reflect.DeepEqual(x, x0) || !reflect.DeepEqual(p, p0)) {
				t.Fatalf("seed %d, %s: another allocation", seed, name)
			}
			if name != "every column" {
				// The same optimum over fewer columns: the same max-min level
				// and shares up to the LP's tolerance.
				for i := range x {
					if d := x[i] - x0[i]; d > 1e-6 || d < -1e-6 {
						t.Fatalf("seed %d, %s: share %d %v, teacher %v", seed, name, i, x[i], x0[i])
					}
				}
			}
		}
		empty, _ := NewColumnSupport(tab, nil)
		x, p := allocPacked(t, &MaxMinFairnessPacked{TieDeficit: 5, Support: empty}, s)
		if len(p) != 0 {
			t.Fatalf("seed %d: empty support, pairs %v", seed, p)
		}
		for i, j := range s.Jobs {
			row := s.Throughput[i*3 : i*3+3]
			best := 0
			for k := range row {
				if row[k] > row[best] {
					best = k
				}
			}
			for k := range row {
				if x[i*3+k] > 0 && k != best {
					t.Fatalf("seed %d: job %d runs on %s, not its fastest type", seed, j.ID, s.Types[k])
				}
			}
		}
	}
}

// TestSupportFile: a tiered file's support round-trips by name, and
// bad entries are refused naming them.
func TestSupportFile(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	sup, err := NewColumnSupport(tab, []SupportColumn{{A: "A3C", GPU: "v100"}, {A: "LM (batch size 5)", B: "A3C", GPU: "k80"}})
	if err != nil {
		t.Fatal(err)
	}
	b := writeSupport(t, sup)
	p, err := ParseTieredPolicy(b)
	if err != nil || p.Support == nil || !reflect.DeepEqual(p.Support.Columns(tab), sup.Columns(tab)) || p.Support.Len() != 2 {
		t.Fatalf("round trip: %v %+v", err, p)
	}
	for bad, want := range map[string]string{
		`{"alone": [["GPT-9", "v100"]], "pairs": []}`:       `unknown job type "GPT-9"`,
		`{"alone": [["A3C", ""]], "pairs": []}`:             "no GPU type",
		`{"alone": [], "pairs": [["A3C", "", "v100"]]}`:     "no second job type",
		`{"alone": [], "pairs": [["A3C", "nope", "v100"]]}`: `unknown job type "nope"`,
		`{"alone": [], "pairs": [], "extra": 1}`:            `unknown field "extra"`,
	} {
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		f["support"] = json.RawMessage(bad)
		doc, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseTieredPolicy([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

// TestTieredClone: a clone has every exported parameter of the original
// (set to non-zero values here) and weights of its own.
func TestTieredClone(t *testing.T) {
	sup := fullSupport(t)
	p := &TieredPackedPolicy{Weights: []float64{1, 2}, LogRatio: 1, LoadSlope: -1, Clairvoyant: true, MaxUpperHours: 4,
		GangGuardHours: 100, AgeGuardHours: 300, TieDeficit: 5, Support: sup, MaxPairColumns: 8000}
	c := p.Clone()
	v, w := reflect.ValueOf(p).Elem(), reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			if v.Field(i).IsZero() {
				t.Fatalf("field %s is zero in the original: set it", f.Name)
			}
			if !reflect.DeepEqual(v.Field(i).Interface(), w.Field(i).Interface()) {
				t.Errorf("field %s: %v, want %v", f.Name, w.Field(i), v.Field(i))
			}
		}
	}
	c.Weights[0] = 9
	if p.Weights[0] != 1 {
		t.Fatal("the clone shares its weights")
	}
}

// TestSupportMaxLogLoad: past the support's largest load the student
// solves the full LP (the teacher's allocation); below it, its support's.
// The limit round-trips through the file and is bounded.
func TestSupportMaxLogLoad(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	s := tableRound(t, 30, []int{4, 4, 4}, 3) // 30 jobs on 12 GPUs: log_load 0.92
	w, r := DefaultTieredParams(false)
	teacher := &TieredPackedPolicy{Weights: w, LogRatio: r, TieDeficit: 5}
	x0 := make([]float64, len(s.Throughput))
	if err := teacher.Allocate(s, x0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		max  float64
		full bool
	}{{0.9, true}, {0.95, false}} {
		empty, _ := NewColumnSupport(tab, nil)
		empty.MaxLogLoad = tc.max
		st := teacher.Clone()
		st.Support = empty
		x := make([]float64, len(s.Throughput))
		if err := st.Allocate(s, x); err != nil {
			t.Fatal(err)
		}
		if got := reflect.DeepEqual(x, x0) && len(st.Pairs(s)) > 0; got != tc.full {
			t.Errorf("max log load %v at 0.92: the teacher's allocation %v, want %v", tc.max, got, tc.full)
		}
	}
	sup, _ := NewColumnSupport(tab, []SupportColumn{{A: "A3C", GPU: "v100"}})
	sup.MaxLogLoad = 0.25
	b := writeSupport(t, sup)
	p, err := ParseTieredPolicy(b)
	if err != nil || p.Support.MaxLogLoad != 0.25 {
		t.Fatalf("round trip: %v %+v", err, p.Support)
	}
	bad := strings.Replace(string(b), `"max_log_load": 0.25`, `"max_log_load": 11`, 1)
	if _, err := ParseTieredPolicy([]byte(bad)); err == nil || !strings.Contains(err.Error(), "max_log_load") {
		t.Fatalf("max_log_load 11: %v", err)
	}
	// Without the field the support holds at every load.
	nolimit := strings.Replace(string(b), `"max_log_load": 0.25`, `"alone_note": 0`, 1)
	if p, err := ParseTieredPolicy([]byte(strings.Replace(nolimit, `,
    "alone_note": 0`, "", 1))); err != nil || !math.IsInf(p.Support.MaxLogLoad, 1) {
		t.Fatalf("no limit: %v", err)
	}
}

// TestSupportPrice: a priced support, even an empty one, reaches the
// full LP's optimum in both objectives (the allocation itself may be
// another optimal vertex), pricing columns in only where the support
// lacks them; unpriced, the empty support falls short.
func TestSupportPrice(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(6) {
		s := tableRound(t, 30, []int{4, 4, 4}, seed)
		teacher := &MaxMinFairnessPacked{TieDeficit: 5}
		allocPacked(t, teacher, s)
		want0, want1 := teacher.lp.value(0), teacher.lp.value(1)
		var names []SupportColumn
		for _, u := range teacher.Used() {
			c := SupportColumn{A: tab.Models[u.A], GPU: s.Types[u.GPU]}
			if u.B >= 0 {
				c.B = tab.Models[u.B]
			}
			names = append(names, c)
		}
		own, _ := NewColumnSupport(tab, names)
		empty, _ := NewColumnSupport(tab, nil)
		for name, sup := range map[string]*ColumnSupport{"empty": empty, "the columns it used": own} {
			sup.Price = true
			p := &MaxMinFairnessPacked{TieDeficit: 5, Support: sup}
			x, pairs := allocPacked(t, p, s)
			// A valid allocation: each job's time at most 1, each type's
			// GPUs within its count.
			nt := len(s.Types)
			time, use := make(map[int]float64), make([]float64, nt)
			for i, j := range s.Jobs {
				for k := range nt {
					time[j.ID] += x[i*nt+k]
					use[k] += x[i*nt+k] * float64(j.Scale)
				}
			}
			for _, pr := range pairs {
				for k := range nt {
					time[pr.A] += pr.X[k]
					time[pr.B] += pr.X[k]
					use[k] += pr.X[k] * float64(s.Jobs[0].Scale)
				}
			}
			for id, v := range time {
				if v > 1+1e-9 {
					t.Fatalf("seed %d, %s: job %d runs %v of the time", seed, name, id, v)
				}
			}
			for k, u := range use {
				if u > float64(s.Capacity[k])+1e-9 {
					t.Fatalf("seed %d, %s: %s uses %v of %d GPUs", seed, name, s.Types[k], u, s.Capacity[k])
				}
			}
			got0, got1 := p.lp.value(0), p.lp.value(1)
			if math.Abs(got0-want0) > 1e-9 || math.Abs(got1-want1) > 1e-9*math.Abs(want1) {
				t.Errorf("seed %d, %s support: objectives %v and %v, the full LP's %v and %v", seed, name, got0, got1, want0, want1)
			}
			if (p.Priced > 0) != (name == "empty") {
				t.Errorf("seed %d, %s support: priced in %d times", seed, name, p.Priced)
			}
		}
		empty.Price = false
		p := &MaxMinFairnessPacked{TieDeficit: 5, Support: empty}
		allocPacked(t, p, s)
		if got := p.lp.value(0); !(got < want0-1e-6) {
			t.Errorf("seed %d: unpriced, the empty support reaches %v of %v: pricing is not what the test measures", seed, got, want0)
		}
	}
}

// TestSupportBands: past a band's limit the student uses the band above
// it (the allocation of a policy with that band alone), or the full LP
// past the last; bands round-trip through a file, and bad chains are
// refused naming the band.
func TestSupportBands(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	s := tableRound(t, 30, []int{4, 4, 4}, 3) // log_load 0.92
	w, r := DefaultTieredParams(false)
	teacher := &TieredPackedPolicy{Weights: w, LogRatio: r, TieDeficit: 5}
	alloc := func(sup *ColumnSupport) []float64 {
		p := teacher.Clone()
		p.Support = sup
		x := make([]float64, len(s.Throughput))
		if err := p.Allocate(s, x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	full := alloc(nil)
	low, _ := NewColumnSupport(tab, nil) // fastest alone columns only
	high, _ := NewColumnSupport(tab, []SupportColumn{{A: "A3C", GPU: "k80"}, {A: "ResNet-18 (batch size 16)", B: "ResNet-18 (batch size 16)", GPU: "v100"}})
	onlyHigh, onlyLow := alloc(high), alloc(low)
	if reflect.DeepEqual(onlyHigh, onlyLow) || reflect.DeepEqual(onlyHigh, full) {
		t.Fatal("the two bands give the same allocation: the test cannot tell them apart")
	}
	for _, tc := range []struct {
		lowMax, highMax float64
		want            []float64
	}{{0.95, math.Inf(1), onlyLow}, {0.9, math.Inf(1), onlyHigh}, {0.5, 0.95, onlyHigh}, {0.5, 0.9, full}} {
		l, h := *low, *high
		l.MaxLogLoad, h.MaxLogLoad, l.Above = tc.lowMax, tc.highMax, &h
		if got := alloc(&l); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("bands up to %v and %v at 0.92: %v, want %v", tc.lowMax, tc.highMax, got, tc.want)
		}
	}
	if got := (&ColumnSupport{MaxLogLoad: 0.1, Above: &ColumnSupport{MaxLogLoad: 1}}).At(2); got != nil {
		t.Errorf("past every band: %v, want the full LP", got)
	}

	l, h := *low, *high
	l.MaxLogLoad, l.Above, h.Price = 0.25, &h, true
	b := writeSupport(t, &l)
	p, err := ParseTieredPolicy(b)
	if err != nil || p.Support.MaxLogLoad != 0.25 || p.Support.Above == nil || !reflect.DeepEqual(p.Support.Above.Columns(tab), high.Columns(tab)) ||
		!math.IsInf(p.Support.Above.MaxLogLoad, 1) || p.Support.Len() != 2 || p.Support.Price || !p.Support.Above.Price {
		t.Fatalf("round trip: %v %+v", err, p.Support)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"max_log_load": 0.25,`, ``, "a band above it, and no max_log_load"},
		{`"pairs": [
        [
          "ResNet-18`, `"max_log_load": 0.2, "pairs": [
        [
          "ResNet-18`, "band 0: max_log_load 0.25: want it below the next band's (0.2)"},
		{`"A3C",
          "k80"`, `"A3D",
          "k80"`, `band 1: support column 0: unknown job type "A3D"`},
	} {
		bad := strings.Replace(string(b), tc.from, tc.to, 1)
		if bad == string(b) {
			t.Fatalf("%q not in the file:\n%s", tc.from, b)
		}
		if _, err := ParseTieredPolicy([]byte(bad)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.to, err, tc.want)
		}
	}
	// More bands than MaxSupportBands: refused, not followed.
	deep := `{"alone": [], "pairs": []}`
	for k := range MaxSupportBands {
		deep = fmt.Sprintf(`{"alone": [], "pairs": [], "max_log_load": %d, "above": %s}`, -k-1, deep)
	}
	i := strings.Index(string(b), `"support": `)
	withDeep := string(b)[:i] + `"support": ` + deep + "\n}\n"
	if _, err := ParseTieredPolicy([]byte(withDeep)); err == nil || !strings.Contains(err.Error(), "more than 8 bands") {
		t.Errorf("%d bands: %v", MaxSupportBands+1, err)
	}
}

// TestMaxPairColumns: a round with more pair columns than the limit is
// refused with ErrRoundTooLarge; under it the allocation is unchanged.
func TestMaxPairColumns(t *testing.T) {
	s := tableRound(t, 30, []int{4, 4, 4}, 1)
	x0, p0 := allocPacked(t, &MaxMinFairnessPacked{}, s)
	x, p := allocPacked(t, &MaxMinFairnessPacked{MaxPairColumns: 1 << 20}, s)
	if !reflect.DeepEqual(x, x0) || !reflect.DeepEqual(p, p0) {
		t.Fatal("a limit above the round changed its allocation")
	}
	err := (&MaxMinFairnessPacked{MaxPairColumns: 10}).Allocate(s, make([]float64, len(s.Throughput)))
	if !errors.Is(err, ErrRoundTooLarge) || !strings.Contains(err.Error(), "more than 10 pair columns") {
		t.Fatalf("limit 10: %v", err)
	}
}
