package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Size of the figure WriteAllocationPlot draws.
const (
	PlotWidth  = 11 * vg.Inch
	PlotHeight = 5 * vg.Inch
)

// ZoomFromPct is where the right-hand detail panel of the allocation plot
// starts on the arrival axis: below it all policies place everything.
const ZoomFromPct = 80

// schedulerColors gives each known scheduler a fixed colour, so that a
// policy looks the same in every figure.
var schedulerColors = map[string]color.Color{
	"random":     rgb(0x7f, 0x7f, 0x7f),
	"bestfit":    rgb(0x1f, 0x77, 0xb4),
	"dotprod":    rgb(0x94, 0x67, 0xbd),
	"packing":    rgb(0xff, 0x7f, 0x0e),
	"clustering": rgb(0x2c, 0xa0, 0x2c),
	"fgd":        rgb(0xd6, 0x27, 0x28),
	"kube":       rgb(0x8c, 0x56, 0x4b),
	"p2c":        rgb(0xe3, 0x77, 0xc2),
}

// spareColors colour schedulers without an entry in schedulerColors.
var spareColors = []color.Color{rgb(0x17, 0xbe, 0xcf), rgb(0xbc, 0xbd, 0x22), rgb(0x00, 0x00, 0x00)}

func rgb(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 0xff} }

// WriteAllocationPlot draws the GPU allocation curve of each summary (x:
// arrived GPU demand in % of capacity; y: GPU allocation ratio in %) and
// writes the figure to w as PNG. The left panel spans 0 to 130% arrival,
// with the legend (sorted by allocation at 130%) and a dashed "ideal" line
// where every arrived pod is placed; the right panel enlarges arrival from
// ZoomFromPct to 130%, where the policies part.
func WriteAllocationPlot(w io.Writer, sums []SaturationSummary, title string) error {
	full := newAllocPlot(title, 0, HeadlineBin, 0, 100, 10)
	lo := 100.0
	for _, s := range sums {
		for _, b := range s.Bins {
			if b.ArrivalPct >= ZoomFromPct {
				lo = min(lo, b.AllocMean)
			}
		}
	}
	lo = max(0, min(ZoomFromPct, 5*math.Floor(lo/5)))
	zoom := newAllocPlot(fmt.Sprintf("detail: arrival %d-%d%%", ZoomFromPct, HeadlineBin), ZoomFromPct, HeadlineBin, lo, 100, 5)
	full.Legend.Top, full.Legend.Left = true, true
	full.Legend.XOffs, full.Legend.YOffs = vg.Points(10), vg.Points(-10)
	full.Legend.TextStyle.Font.Size = vg.Points(11)

	for _, p := range []*plot.Plot{full, zoom} {
		ideal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 100, Y: 100}, {X: HeadlineBin, Y: 100}})
		if p == zoom {
			ideal, err = plotter.NewLine(plotter.XYs{{X: ZoomFromPct, Y: ZoomFromPct}, {X: 100, Y: 100}, {X: HeadlineBin, Y: 100}})
		}
		if err != nil {
			return fmt.Errorf("plot ideal line: %w", err)
		}
		ideal.Color = color.Gray{Y: 160}
		ideal.Width = vg.Points(1.2)
		ideal.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(ideal)
		spare := 0
		for _, s := range SortByAlloc(sums) {
			xy := make(plotter.XYs, 0, len(s.Bins))
			for _, b := range s.Bins {
				if p == full || b.ArrivalPct >= ZoomFromPct {
					xy = append(xy, plotter.XY{X: float64(b.ArrivalPct), Y: b.AllocMean})
				}
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return fmt.Errorf("plot %s: %w", s.Scheduler, err)
			}
			c, ok := schedulerColors[s.Scheduler]
			if !ok {
				c = spareColors[spare%len(spareColors)]
				spare++
			}
			l.Color, l.Width = c, vg.Points(2)
			p.Add(l)
			if p == full {
				p.Legend.Add(fmt.Sprintf("%s  %.1f%% at %d%%", s.Scheduler, s.AllocAt130Mean, HeadlineBin), l)
			}
		}
		if p == full {
			p.Legend.Add("ideal (every pod placed)", ideal)
		}
	}

	// Adding plotters widens the axes to the data; restore the ranges.
	full.X.Min, full.X.Max, full.Y.Min, full.Y.Max = 0, HeadlineBin, 0, 100
	zoom.X.Min, zoom.X.Max, zoom.Y.Min, zoom.Y.Max = ZoomFromPct, HeadlineBin, lo, 100

	img := vgimg.New(PlotWidth, PlotHeight)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12)}
	canvases := plot.Align([][]*plot.Plot{{full, zoom}}, tiles, dc)
	full.Draw(canvases[0][0])
	zoom.Draw(canvases[0][1])
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}

// newAllocPlot returns an empty allocation plot with labelled ticks over
// the given ranges (x every 10, y every step) and a grid.
func newAllocPlot(title string, xlo, xhi, ylo, yhi float64, step int) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "arrived GPU demand (% of GPU capacity)"
	p.Y.Label.Text = "GPU allocation ratio (%)"
	p.X.Tick.Marker = plot.ConstantTicks(ticks(xlo, xhi, 10))
	p.Y.Tick.Marker = plot.ConstantTicks(ticks(ylo, yhi, float64(step)))
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 220}
	grid.Horizontal.Color = color.Gray{Y: 220}
	p.Add(grid)
	return p
}

// SaveAllocationPlot writes WriteAllocationPlot's PNG to the file path.
func SaveAllocationPlot(path string, sums []SaturationSummary, title string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save plot: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("save plot %s: %w", path, cerr)
		}
	}()
	if err := WriteAllocationPlot(f, sums, title); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ticks returns labelled major ticks from lo to hi every step.
func ticks(lo, hi, step float64) []plot.Tick {
	var t []plot.Tick
	for v := lo; v <= hi+1e-9; v += step {
		t = append(t, plot.Tick{Value: v, Label: fmt.Sprint(v)})
	}
	return slices.Clip(t)
}
