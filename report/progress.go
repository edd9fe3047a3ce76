package report

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// Progress reports advance on long work.
type Progress interface {
	Add(n int) error
	Finish() error
}

// NoProgress is the Progress of work nobody watches.
type NoProgress struct{}

// Add does nothing.
func (NoProgress) Add(int) error { return nil }

// Finish does nothing.
func (NoProgress) Finish() error { return nil }

// terminal is w as a file when it is a terminal: bars are drawn only
// there, so that logs, pipes and tests stay clean.
func terminal(w io.Writer) (*os.File, bool) {
	f, ok := w.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) && !isatty.IsCygwinTerminal(f.Fd()) {
		return nil, false
	}
	return f, true
}

// NewProgress returns a progress bar of total steps described by desc,
// drawn on w only when w is a terminal file such as os.Stderr; otherwise
// NoProgress. Add may be called from several goroutines.
func NewProgress(w io.Writer, total int, desc string) Progress {
	f, ok := terminal(w)
	if !ok {
		return NoProgress{}
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

// TickProgress adapts bar to runs simulations told of their simulated time
// (from their own goroutines): one step per tick of each run.
func TickProgress(bar Progress, runs int, tick float64) func(run int, now float64) {
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

// ByteBar returns a factory of byte-count progress bars drawing on w when
// it is a terminal, else nil (no bar), as datasets.FetchOptions.Bar takes.
func ByteBar(w io.Writer) func(size int64, name string) io.Writer {
	if _, ok := terminal(w); !ok {
		return nil
	}
	return func(size int64, name string) io.Writer {
		return progressbar.DefaultBytes(size, name)
	}
}
