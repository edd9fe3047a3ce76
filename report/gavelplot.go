package report

import (
	"fmt"
	"image/color"
	"io"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// GavelPlotMaxJCT is the top of the JCT axis (hours), as in Gavel's
// figures; points above it are drawn at the edge.
const GavelPlotMaxJCT = 100

// WriteGavelPlot draws average JCT (hours) against arrival rate, one line
// per policy (points where a run stopped at the bound are left out), and
// the zero-wait floor dashed, as PNG.
func WriteGavelPlot(w io.Writer, policies []string, rates []float64, sums []GavelSummary, title string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "arrival rate (jobs/h)"
	p.Y.Label.Text = "average JCT (hours)"
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = color.Gray{Y: 220}, color.Gray{Y: 220}
	p.Add(grid)
	p.Legend.Top, p.Legend.Left = true, true
	nr := len(rates)
	floor := make(plotter.XYs, nr)
	for ri, r := range rates {
		floor[ri] = plotter.XY{X: r, Y: sums[ri].FloorJCT}
	}
	fl, err := plotter.NewLine(floor)
	if err != nil {
		return fmt.Errorf("plot floor: %w", err)
	}
	fl.Color, fl.Dashes, fl.Width = color.Gray{Y: 120}, []vg.Length{vg.Points(5), vg.Points(3)}, vg.Points(1.2)
	p.Add(fl)
	p.Legend.Add("zero-wait floor", fl)
	for pi, name := range policies {
		var xy plotter.XYs
		for ri, r := range rates {
			if s := sums[pi*nr+ri]; s.AvgJCTMean != nil && s.SaturatedSeeds == 0 {
				xy = append(xy, plotter.XY{X: r, Y: min(*s.AvgJCTMean, GavelPlotMaxJCT)})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		c, ok := schedulerColors[name]
		if !ok {
			c = gavelColors[pi%len(gavelColors)]
		}
		l.Color, l.Width, pts.Color = c, vg.Points(2), c
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, GavelPlotMaxJCT
	img := vgimg.New(PlotWidth, PlotHeight)
	p.Draw(draw.New(img))
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}

var gavelColors = []color.Color{rgb(0x1f, 0x77, 0xb4), rgb(0xff, 0x7f, 0x0e), rgb(0x2c, 0xa0, 0x2c), rgb(0xd6, 0x27, 0x28),
	rgb(0x94, 0x67, 0xbd), rgb(0x8c, 0x56, 0x4b), rgb(0xe3, 0x77, 0xc2), rgb(0x7f, 0x7f, 0x7f), rgb(0xbc, 0xbd, 0x22), rgb(0x17, 0xbe, 0xcf)}

// SaveGavelPlot writes WriteGavelPlot's PNG to path.
func SaveGavelPlot(path string, policies []string, rates []float64, sums []GavelSummary, title string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save plot: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("save plot %s: %w", path, cerr)
		}
	}()
	return WriteGavelPlot(f, policies, rates, sums, title)
}
