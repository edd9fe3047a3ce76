package main

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// progress reports advance on long work.
type progress interface {
	Add(n int) error
	Finish() error
}

// noProgress is the progress of work nobody watches.
type noProgress struct{}

func (noProgress) Add(int) error { return nil }
func (noProgress) Finish() error { return nil }

// newProgress returns a progress bar of total steps described by desc,
// drawn on w only when w is a terminal file such as os.Stderr (so logs,
// pipes and tests stay clean); otherwise a no-op. Add may be called from
// several goroutines.
func newProgress(w io.Writer, total int, desc string) progress {
	f, ok := w.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) && !isatty.IsCygwinTerminal(f.Fd()) {
		return noProgress{}
	}
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	)
}

// tickProgress adapts bar to runs simulations told of their simulated time
// (from their own goroutines): one step per tick of each run.
func tickProgress(bar progress, runs int, tick float64) func(run int, now float64) {
	var mu sync.Mutex
	done := make([]int, runs)
	return func(run int, now float64) {
		mu.Lock()
		defer mu.Unlock()
		if k := int(now/tick) - done[run]; k > 0 {
			_ = bar.Add(k)
			done[run] += k
		}
	}
}
