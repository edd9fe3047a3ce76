package report

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
)

// ParseGPUGrid reads "name=v1,v2;name2=v3" into grid axes for allocation
// policy policy, checking every name and value with its SetParam.
func ParseGPUGrid(spec, policy string) ([]SweepParam, error) {
	var grid []SweepParam
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, vals, ok := strings.Cut(part, "=")
		if !ok || vals == "" {
			return nil, fmt.Errorf("grid %q: %q is not name=v1,v2,...", spec, part)
		}
		p := SweepParam{Name: strings.TrimSpace(name)}
		for _, v := range strings.Split(vals, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("grid %q: %s value %q is not a number", spec, p.Name, v)
			}
			if _, err := env.NewAllocationPolicy(policy, []env.PolicyParam{{Name: p.Name, Value: x}}); err != nil {
				return nil, fmt.Errorf("grid %q: %w", spec, err)
			}
			p.Values = append(p.Values, x)
		}
		grid = append(grid, p)
	}
	if len(grid) == 0 {
		return nil, fmt.Errorf("grid %q has no parameters", spec)
	}
	return grid, nil
}

// GPUTunePoint is one grid point over the seeds: the mean average JCT of
// the seeds that finished and how many stopped at the bound.
type GPUTunePoint struct {
	Params  []env.PolicyParam
	AvgJCT  float64 // hours; NaN when every seed stopped at the bound
	StdJCT  float64 // sample standard deviation over the finished seeds
	P99JCT  float64
	AtBound int
	Runs    []GPUMetrics
	order   int
}

// TuneGPU runs every grid point on every seed (run's scenario and rate,
// policy) and ranks the points: fewest runs at the bound first, then
// lowest mean average JCT; ties keep grid order. The result does not
// depend on workers.
func TuneGPU(ctx context.Context, run GPURunConfig, grid []SweepParam, seeds []uint64, workers int, onRun func()) ([]GPUTunePoint, error) {
	if len(seeds) == 0 {
		return nil, fmt.Errorf("tune: need at least one seed")
	}
	var points []GPUTunePoint
	var walk func(i int, acc []env.PolicyParam)
	walk = func(i int, acc []env.PolicyParam) {
		if i == len(grid) {
			points = append(points, GPUTunePoint{Params: slices.Clone(acc), order: len(points)})
			return
		}
		for _, v := range grid[i].Values {
			walk(i+1, append(acc, env.PolicyParam{Name: grid[i].Name, Value: v}))
		}
	}
	walk(0, nil)
	n := len(seeds)
	for i := range points {
		points[i].Runs = make([]GPUMetrics, n)
	}
	err := ForEach(ctx, len(points)*n, workers, func(k int) error {
		c := run
		c.Params, c.Seed = points[k/n].Params, seeds[k%n]
		m, err := RunGPU(c)
		if err != nil {
			return fmt.Errorf("tune: %w", err)
		}
		points[k/n].Runs[k%n] = m
		if onRun != nil {
			onRun()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range points {
		p := &points[i]
		var avg, p99 []float64
		for _, m := range p.Runs {
			if m.AvgJCT == nil {
				p.AtBound++
				continue
			}
			avg, p99 = append(avg, *m.AvgJCT), append(p99, *m.P99JCT)
		}
		p.AvgJCT, p.StdJCT, p.P99JCT = math.NaN(), math.NaN(), math.NaN()
		if len(avg) > 0 {
			p.AvgJCT, p.StdJCT = meanStd(avg)
			p.P99JCT = mean(p99)
		}
	}
	slices.SortStableFunc(points, func(a, b GPUTunePoint) int {
		switch {
		case a.AtBound != b.AtBound:
			return a.AtBound - b.AtBound
		case a.AvgJCT < b.AvgJCT:
			return -1
		case a.AvgJCT > b.AvgJCT:
			return 1
		}
		return a.order - b.order
	})
	return points, nil
}

// WriteGPUTune writes the ranked points (the first top; 0: all).
func WriteGPUTune(w io.Writer, grid []SweepParam, points []GPUTunePoint, top int) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"rank"}
	for _, g := range grid {
		head = append(head, g.Name)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "avg JCT h", "± std", "p99 JCT h", "at bound"), "\t")+"\t")
	for i, p := range points {
		if top > 0 && i >= top {
			break
		}
		row := []string{strconv.Itoa(i + 1)}
		for _, q := range p.Params {
			row = append(row, strconv.FormatFloat(q.Value, 'g', -1, 64))
		}
		row = append(row, fnum(p.AvgJCT), fnum(p.StdJCT), fnum(p.P99JCT), fmt.Sprintf("%d/%d", p.AtBound, len(p.Runs)))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}
