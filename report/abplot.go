package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/tegrl/tegrl/env"
)

// Size of each A/B figure.
const (
	ABPlotWidth  = 8 * vg.Inch
	ABPlotHeight = 4.5 * vg.Inch
)

// cdfPoints bounds the points of a drawn CDF: beyond a few hundred the
// line looks the same and the PNG only grows.
const cdfPoints = 800

// WriteABPlots draws the figures of a comparison into dir (which must
// exist) and returns them, file names relative to dir, in report order:
// CDFs of job completion time and of slowdown (A and B, jobs pooled over
// seeds), CPU and GPU utilisation, GPU fragmentation, damping and queue
// length over time (means over seeds).
func WriteABPlots(dir string, res *ABResult) ([]ABPlot, error) {
	a, b := res.Report.A, res.Report.B
	ca, cb := abColors(a, b)
	type line struct {
		col   color.Color
		dash  bool
		pts   plotter.XYs
		label string
	}
	cdf := func(runs []ABRun, f func(env.JobOutcome) float64) plotter.XYs {
		var xs []float64
		for _, r := range runs {
			if r.Series != nil {
				for _, o := range r.Series.Jobs {
					xs = append(xs, f(o))
				}
			}
		}
		return cdfXY(xs)
	}
	over := func(runs []ABRun, f func(env.SeriesSample) float64) plotter.XYs {
		return meanOverTime(runs, f)
	}
	jct := func(o env.JobOutcome) float64 { return o.JCTS }
	slow := func(o env.JobOutcome) float64 { return o.Slowdown }
	figs := []struct {
		file, title, xlabel, ylabel string
		logX                        bool
		lines                       []line
	}{
		{"cdf_jct.png", "Job completion time (CDF, jobs of all seeds)", "job completion time, s (arrival to end)", "fraction of completed jobs", true, []line{
			{ca, false, cdf(res.A, jct), "A: " + a}, {cb, false, cdf(res.B, jct), "B: " + b}}},
		{"cdf_slowdown.png", "Slowdown (CDF, jobs of all seeds)", "slowdown (completion time / duration)", "fraction of completed jobs", true, []line{
			{ca, false, cdf(res.A, slow), "A: " + a}, {cb, false, cdf(res.B, slow), "B: " + b}}},
		{"utilisation.png", "Utilisation over time (mean over seeds)", "time, h", "allocated, % of capacity", false, []line{
			{ca, false, over(res.A, func(s env.SeriesSample) float64 { return 100 * s.UtilCPU }), "A CPU"},
			{ca, true, over(res.A, func(s env.SeriesSample) float64 { return 100 * s.UtilGPU }), "A GPU"},
			{cb, false, over(res.B, func(s env.SeriesSample) float64 { return 100 * s.UtilCPU }), "B CPU"},
			{cb, true, over(res.B, func(s env.SeriesSample) float64 { return 100 * s.UtilGPU }), "B GPU"}}},
		{"gpu_fragmentation.png", "GPU fragmentation over time (mean over seeds)", "time, h", "F(M), % of GPU capacity", false, []line{
			{ca, false, over(res.A, func(s env.SeriesSample) float64 { return 100 * s.GPUFragRate }), "A: " + a},
			{cb, false, over(res.B, func(s env.SeriesSample) float64 { return 100 * s.GPUFragRate }), "B: " + b}}},
		{"damping.png", "Damping γ over time (mean over seeds)", "time, h", "damping γ", false, []line{
			{ca, false, over(res.A, func(s env.SeriesSample) float64 { return s.Damping }), "A: " + a},
			{cb, false, over(res.B, func(s env.SeriesSample) float64 { return s.Damping }), "B: " + b}}},
		{"queue.png", "Queue length over time (mean over seeds)", "time, h", "jobs waiting", false, []line{
			{ca, false, over(res.A, func(s env.SeriesSample) float64 { return float64(s.QueueLen) }), "A: " + a},
			{cb, false, over(res.B, func(s env.SeriesSample) float64 { return float64(s.QueueLen) }), "B: " + b}}},
	}
	var out []ABPlot
	for _, fg := range figs {
		p := plot.New()
		p.Title.Text = fg.title
		p.Title.TextStyle.Font.Size = vg.Points(13)
		p.X.Label.Text, p.Y.Label.Text = fg.xlabel, fg.ylabel
		grid := plotter.NewGrid()
		grid.Vertical.Color, grid.Horizontal.Color = color.Gray{Y: 220}, color.Gray{Y: 220}
		p.Add(grid)
		p.Legend.Top, p.Legend.Left = true, !fg.logX
		p.Legend.TextStyle.Font.Size = vg.Points(11)
		positive := true
		for _, l := range fg.lines {
			for _, pt := range l.pts {
				positive = positive && pt.X > 0
			}
		}
		if fg.logX && positive {
			p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
			p.Legend.Top, p.Legend.Left = false, false
			p.Legend.YOffs = vg.Points(20)
		}
		for _, l := range fg.lines {
			if len(l.pts) == 0 {
				continue // no completed job or no sample: nothing to draw
			}
			pl, err := plotter.NewLine(l.pts)
			if err != nil {
				return nil, fmt.Errorf("ab plot %s, %s: %w", fg.file, l.label, err)
			}
			pl.Color, pl.Width = l.col, vg.Points(2)
			if l.dash {
				pl.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			}
			p.Add(pl)
			p.Legend.Add(l.label, pl)
		}
		if fg.logX {
			p.Y.Min, p.Y.Max = 0, 1
			p.Y.Tick.Marker = plot.ConstantTicks(fractionTicks)
		} else {
			// From zero, with headroom above the curves for the legend.
			top := 0.0
			for _, l := range fg.lines {
				for _, pt := range l.pts {
					top = max(top, pt.Y)
				}
			}
			if top == 0 {
				top = 1
			}
			p.X.Min, p.Y.Min, p.Y.Max = 0, 0, 1.3*top
		}
		if err := savePNG(filepath.Join(dir, fg.file), p); err != nil {
			return nil, err
		}
		out = append(out, ABPlot{File: fg.file, Title: fg.title})
	}
	return out, nil
}

// fractionTicks label a [0, 1] axis every 0.2 (computed from integers, so
// no label reads 0.6000000000000001).
var fractionTicks = func() []plot.Tick {
	var t []plot.Tick
	for i := range 6 {
		v := float64(i) / 5
		t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
	}
	return t
}()

// abColors picks A's and B's colours: the scheduler's own colour where it
// has one, never the same for both.
func abColors(a, b string) (color.Color, color.Color) {
	ca, ok := schedulerColors[a]
	if !ok {
		ca = spareColors[2] // black: A is usually the Langevin baseline
	}
	cb, ok := schedulerColors[b]
	if !ok || b == a || cb == ca {
		cb = schedulerColors["fgd"] // red
		if cb == ca {
			cb = spareColors[0]
		}
	}
	return ca, cb
}

// cdfXY returns the empirical CDF of xs, at most cdfPoints points (evenly
// spaced ranks, the largest value included): (x_(k), k/n).
func cdfXY(xs []float64) plotter.XYs {
	n := len(xs)
	if n == 0 {
		return nil
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	m := min(n, cdfPoints)
	pts := make(plotter.XYs, 0, m)
	for i := range m {
		k := n - 1
		if m > 1 {
			k = i * (n - 1) / (m - 1)
		}
		pts = append(pts, plotter.XY{X: ys[k], Y: float64(k+1) / float64(n)})
	}
	return pts
}

// meanOverTime averages f over the runs' time series at every sample time
// of any run (hours on x). A run contributes its latest sample at or before
// the time, and nothing before its first sample or after its last, so runs
// of different lengths or intervals average on one grid.
func meanOverTime(runs []ABRun, f func(env.SeriesSample) float64) plotter.XYs {
	var times []float64
	var series [][]env.SeriesSample
	for _, r := range runs {
		if r.Series == nil || len(r.Series.Samples) == 0 {
			continue
		}
		series = append(series, r.Series.Samples)
		for _, s := range r.Series.Samples {
			times = append(times, s.TimeS)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	pos := make([]int, len(series))
	pts := make(plotter.XYs, 0, len(times))
	for _, t := range times {
		sum, n := 0.0, 0
		for i, ss := range series {
			for pos[i]+1 < len(ss) && ss[pos[i]+1].TimeS <= t {
				pos[i]++
			}
			if ss[pos[i]].TimeS > t || t > ss[len(ss)-1].TimeS {
				continue
			}
			sum += f(ss[pos[i]])
			n++
		}
		if n > 0 && !math.IsNaN(sum) {
			pts = append(pts, plotter.XY{X: t / 3600, Y: sum / float64(n)})
		}
	}
	return pts
}

// savePNG draws p at the A/B figure size into the file path.
func savePNG(path string, p *plot.Plot) (err error) {
	img := vgimg.New(ABPlotWidth, ABPlotHeight)
	p.Draw(draw.New(img))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save plot: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("save plot %s: %w", path, cerr)
		}
	}()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		return fmt.Errorf("save plot %s: %w", path, err)
	}
	return nil
}
