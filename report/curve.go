package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// CurvePanel is one panel of a learning curve: a series against steps,
// with optional horizontal reference lines (e.g. a baseline's value).
type CurvePanel struct {
	Title, YLabel string
	Y             []float64 // one value per X; NaN leaves a gap
	Refs          []CurveRef
}

// CurveRef is a labelled horizontal line.
type CurveRef struct {
	Label string
	Y     float64
}

// WriteLearningCurve draws the panels stacked vertically against x (the
// training step) and writes a PNG to w.
func WriteLearningCurve(w io.Writer, title, xLabel string, x []float64, panels []CurvePanel) error {
	if len(panels) == 0 {
		return fmt.Errorf("learning curve: no panels")
	}
	img := vgimg.New(PlotWidth, vg.Length(len(panels))*PlotHeight/2)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(10), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12)}
	refColors := []color.Color{rgb(0xd6, 0x27, 0x28), rgb(0x2c, 0xa0, 0x2c), rgb(0x94, 0x67, 0xbd), rgb(0x8c, 0x56, 0x4b)}
	for r, pn := range panels {
		if len(pn.Y) != len(x) {
			return fmt.Errorf("learning curve: panel %q has %d values for %d steps", pn.Title, len(pn.Y), len(x))
		}
		p := plot.New()
		p.Title.Text = pn.Title
		if r == 0 && title != "" {
			p.Title.Text = title + ": " + pn.Title
		}
		p.X.Label.Text = xLabel
		p.Y.Label.Text = pn.YLabel
		grid := plotter.NewGrid()
		grid.Vertical.Color = color.Gray{Y: 220}
		grid.Horizontal.Color = color.Gray{Y: 220}
		p.Add(grid)
		pts := make(plotter.XYs, 0, len(x))
		for i := range x {
			if !math.IsNaN(pn.Y[i]) && !math.IsInf(pn.Y[i], 0) {
				pts = append(pts, plotter.XY{X: x[i], Y: pn.Y[i]})
			}
		}
		if len(pts) > 0 {
			l, err := plotter.NewLine(pts)
			if err != nil {
				return fmt.Errorf("learning curve %q: %w", pn.Title, err)
			}
			l.Color = rgb(0x1f, 0x77, 0xb4)
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add("learned policy", l)
		}
		for k, ref := range pn.Refs {
			if len(x) == 0 {
				break
			}
			l, err := plotter.NewLine(plotter.XYs{{X: x[0], Y: ref.Y}, {X: x[len(x)-1], Y: ref.Y}})
			if err != nil {
				return fmt.Errorf("learning curve %q: %w", pn.Title, err)
			}
			l.Color = refColors[k%len(refColors)]
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(ref.Label, l)
		}
		p.Legend.Top = true
		p.Draw(draw.Crop(tiles.At(dc, 0, r), 0, 0, 0, 0))
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("learning curve: %w", err)
	}
	return nil
}

// SaveLearningCurve writes WriteLearningCurve's PNG to the file path.
func SaveLearningCurve(path, title, xLabel string, x []float64, panels []CurvePanel) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save learning curve: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("save learning curve %s: %w", path, cerr)
		}
	}()
	return WriteLearningCurve(f, title, xLabel, x, panels)
}
