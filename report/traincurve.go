package report

import (
	"fmt"
	"math"
)

// TrainingPoint is one update of a training run as its learning curve
// reads it: the decisions learned from so far, and the training episodes
// that ended in the update with their mean return and mean slowdown.
type TrainingPoint struct {
	Steps         float64
	Episodes      int
	EpisodeReturn float64
	MeanSlowdown  float64
}

// SaveTrainingCurve plots the training episodes' return (and, with
// slowdown, their mean slowdown beside refs) against the decisions learned
// from, each point the episode-weighted mean over the last window updates
// (single episodes vary with their workload far more than the policy
// does), and writes the PNG to path.
func SaveTrainingCurve(path string, points []TrainingPoint, window int, refs []CurveRef, slowdown bool) error {
	shown := min(window, len(points))
	x := make([]float64, len(points))
	ret := make([]float64, len(points))
	slow := make([]float64, len(points))
	for i, p := range points {
		x[i] = p.Steps
		var n, r, sd float64
		for _, w := range points[max(0, i-window+1) : i+1] {
			k := float64(w.Episodes)
			n += k
			r += k * w.EpisodeReturn
			sd += k * w.MeanSlowdown
		}
		ret[i], slow[i] = math.NaN(), math.NaN()
		if n > 0 {
			ret[i], slow[i] = r/n, sd/n
		}
	}
	over := fmt.Sprintf("training episodes, mean over the last %d updates", shown)
	panels := []CurvePanel{{Title: "episodic return (" + over + ")", YLabel: "return", Y: ret}}
	if slowdown {
		panels = append(panels, CurvePanel{Title: "mean slowdown (" + over + ")", YLabel: "slowdown", Y: slow, Refs: refs})
	}
	return SaveLearningCurve(path, "tegrl train", "decisions learned from", x, panels)
}
