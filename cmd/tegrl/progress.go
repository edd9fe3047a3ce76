package main

import (
	"io"

	"github.com/tegrl/tegrl/report"
)

// progress reports advance on long work (report.Progress).
type (
	progress   = report.Progress
	noProgress = report.NoProgress
)

// newProgress is report.NewProgress: a bar on w only when it is a terminal.
func newProgress(w io.Writer, total int, desc string) progress {
	return report.NewProgress(w, total, desc)
}

// tickProgress is report.TickProgress.
func tickProgress(bar progress, runs int, tick float64) func(run int, now float64) {
	return report.TickProgress(bar, runs, tick)
}
