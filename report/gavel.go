package report

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tegrl/tegrl/env"
)

// GavelSweepConfig is a sweep of Gavel's continuous-jobs experiment over
// policies, arrival rates and seeds.
type GavelSweepConfig struct {
	Policies      []string
	Rates         []float64 // jobs per hour
	Seeds         []uint64
	Multi         bool   // continuous-multiple trace
	Cluster       string // "V:P:K"
	GPUsPerServer int
	Round         env.RoundConfig
	Workers       int // runs at once; <= 0: GOMAXPROCS
	// OnRun, when set, is called after each run (from the worker's
	// goroutine, serialised by the caller if it needs to be).
	OnRun func(policy string, rate float64, seed uint64, r env.RoundResult, took time.Duration)
}

// GavelSummary is one (policy, rate) point over the seeds; its JSON form is
// the `tegrl gavel --json` line.
type GavelSummary struct {
	Scheduler string   `json:"scheduler"`
	Rate      float64  `json:"rate_jobs_per_h"`
	Seeds     []uint64 `json:"seeds"`
	// AvgJCTMean and AvgJCTStd are the mean and sample standard deviation
	// over the seeds that finished of the average JCT (hours) of the
	// measured jobs; nil when every seed stopped at the bound.
	AvgJCTMean *float64 `json:"avg_jct_h_mean"`
	AvgJCTStd  *float64 `json:"avg_jct_h_std"`
	// JobsMeasured is the number of measured jobs per seed (1000 in the
	// protocol).
	JobsMeasured int `json:"jobs_measured"`
	// FloorJCT is the zero-wait floor (hours), mean over seeds: each
	// measured job alone on its fastest GPU type, consolidated.
	FloorJCT float64 `json:"floor_jct_h"`
	// SaturatedSeeds counts the seeds whose run stopped at the bound
	// (above capacity); their JCT is not in the mean.
	SaturatedSeeds int `json:"saturated_seeds"`
}

// ParseRates parses "LO-HI:STEP" (e.g. "0.4-6.0:0.4"), a single rate or a
// comma-separated list of rates, in jobs per hour.
func ParseRates(spec string) ([]float64, error) {
	if lo, rest, ok := strings.Cut(spec, "-"); ok && strings.Contains(rest, ":") {
		hi, step, _ := strings.Cut(rest, ":")
		a, err1 := strconv.ParseFloat(lo, 64)
		b, err2 := strconv.ParseFloat(hi, 64)
		d, err3 := strconv.ParseFloat(step, 64)
		if err1 != nil || err2 != nil || err3 != nil || !(a > 0) || !(d > 0) || b < a || math.IsInf(b, 0) {
			return nil, fmt.Errorf("rates %q: want LO-HI:STEP with 0 < LO <= HI and STEP > 0", spec)
		}
		n := int(math.Round((b-a)/d)) + 1
		if n > 10000 {
			return nil, fmt.Errorf("rates %q: %d rates is too many", spec, n)
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Round((a+float64(i)*d)*1e9) / 1e9
		}
		return out, nil
	}
	var out []float64
	for _, f := range strings.Split(spec, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("rates %q: %q is not a positive number of jobs per hour", spec, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// RunGavelSweep runs every (policy, rate, seed) in parallel and returns one
// summary per (policy, rate), policies outer, rates inner, in the order
// given. The results do not depend on the number of workers.
func RunGavelSweep(ctx context.Context, cfg GavelSweepConfig) ([]GavelSummary, error) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, err
	}
	for _, p := range cfg.Policies {
		if _, err := env.AllocationPolicyByName(p); err != nil {
			return nil, err
		}
	}
	np, nr, ns := len(cfg.Policies), len(cfg.Rates), len(cfg.Seeds)
	res := make([]env.RoundResult, np*nr*ns)
	err = ForEach(ctx, len(res), cfg.Workers, func(i int) error {
		p, r, s := cfg.Policies[i/(nr*ns)], cfg.Rates[i/ns%nr], cfg.Seeds[i%ns]
		start := time.Now()
		run := env.GavelRun{Policy: p, Rate: r, Seed: s, Multi: cfg.Multi, Cluster: cfg.Cluster,
			GPUsPerServer: cfg.GPUsPerServer, Round: cfg.Round}
		out, err := run.Run(tab)
		if err != nil {
			return err
		}
		res[i] = out
		if cfg.OnRun != nil {
			cfg.OnRun(p, r, s, out, time.Since(start))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sums := make([]GavelSummary, 0, np*nr)
	for pi, p := range cfg.Policies {
		for ri, r := range cfg.Rates {
			sums = append(sums, summarizeGavel(p, r, cfg.Seeds, res[(pi*nr+ri)*ns:(pi*nr+ri+1)*ns]))
		}
	}
	return sums, nil
}

func summarizeGavel(p string, rate float64, seeds []uint64, runs []env.RoundResult) GavelSummary {
	s := GavelSummary{Scheduler: p, Rate: rate, Seeds: seeds}
	var v []float64
	for _, r := range runs {
		s.FloorJCT += r.FloorHours / float64(len(runs))
		s.JobsMeasured = max(s.JobsMeasured, len(r.JCT))
		if r.Saturated {
			s.SaturatedSeeds++
			continue
		}
		v = append(v, r.AvgJCTHours)
	}
	if len(v) > 0 {
		m, sd := meanStd(v)
		s.AvgJCTMean, s.AvgJCTStd = &m, &sd
	}
	return s
}

// meanStd is the mean and sample standard deviation (0 for one value).
func meanStd(v []float64) (float64, float64) {
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	if len(v) < 2 {
		return m, 0
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}

// GavelKnee is the first rate at which a policy's average JCT exceeds
// twice its value at the lowest rate (or a run stopped at the bound); 0
// when none does. sums holds one policy's points in rate order.
func GavelKnee(sums []GavelSummary) float64 {
	if len(sums) == 0 || sums[0].AvgJCTMean == nil {
		return 0
	}
	base := *sums[0].AvgJCTMean
	for _, s := range sums[1:] {
		if s.SaturatedSeeds > 0 || s.AvgJCTMean == nil || *s.AvgJCTMean > 2*base {
			return s.Rate
		}
	}
	return 0
}

func gavelCell(s GavelSummary) string {
	if s.AvgJCTMean == nil {
		return "bound"
	}
	c := fmt.Sprintf("%.2f", *s.AvgJCTMean)
	if len(s.Seeds) > 1 {
		c += fmt.Sprintf(" ±%.2f", *s.AvgJCTStd)
	}
	if s.SaturatedSeeds > 0 {
		c += fmt.Sprintf(" (%d at bound)", s.SaturatedSeeds)
	}
	return c
}

// WriteGavelTable writes average JCT (hours) per rate (rows) and policy
// (columns), with the zero-wait floor, and each policy's knee, as a text
// table (markdown false) or Markdown.
func WriteGavelTable(w io.Writer, policies []string, rates []float64, sums []GavelSummary, markdown bool) error {
	sep, open, close := "  ", "", ""
	if markdown {
		sep, open, close = " | ", "| ", " |"
	}
	var b strings.Builder
	head := append([]string{"rate (jobs/h)", "floor"}, policies...)
	fmt.Fprintf(&b, "%s%s%s\n", open, strings.Join(head, sep), close)
	if markdown {
		dash := make([]string, len(head))
		for i := range dash {
			dash[i] = "---:"
		}
		fmt.Fprintf(&b, "|%s|\n", strings.Join(dash, "|"))
	}
	nr := len(rates)
	for ri, r := range rates {
		row := []string{strconv.FormatFloat(r, 'f', -1, 64), fmt.Sprintf("%.2f", sums[ri].FloorJCT)}
		for pi := range policies {
			row = append(row, gavelCell(sums[pi*nr+ri]))
		}
		fmt.Fprintf(&b, "%s%s%s\n", open, strings.Join(row, sep), close)
	}
	row := []string{"knee (2x rate-" + strconv.FormatFloat(rates[0], 'f', -1, 64) + " JCT)", ""}
	for pi := range policies {
		k := GavelKnee(sums[pi*nr : (pi+1)*nr])
		row = append(row, map[bool]string{true: "none", false: strconv.FormatFloat(k, 'f', -1, 64)}[k == 0])
	}
	fmt.Fprintf(&b, "%s%s%s\n", open, strings.Join(row, sep), close)
	_, err := io.WriteString(w, b.String())
	return err
}
