package report

import (
	"bytes"
	"testing"
)

// countBar records the steps added.
type countBar struct{ n int }

func (b *countBar) Add(n int) error { b.n += n; return nil }
func (b *countBar) Finish() error   { return nil }

func TestProgressOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	if p, ok := NewProgress(&buf, 10, "x").(NoProgress); !ok {
		t.Errorf("NewProgress on a buffer: %T, want NoProgress", p)
	}
	if ByteBar(&buf) != nil {
		t.Error("ByteBar on a buffer: a factory, want nil")
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q to a non-terminal", buf.String())
	}
}

// TestTickProgress: one step per whole tick of each run, never counted
// twice.
func TestTickProgress(t *testing.T) {
	bar := &countBar{}
	f := TickProgress(bar, 2, 5)
	for _, c := range []struct {
		run  int
		now  float64
		want int
	}{{0, 12, 2}, {0, 14, 2}, {0, 15, 3}, {1, 4.9, 3}, {1, 10, 5}, {0, 10, 5}} {
		f(c.run, c.now)
		if bar.n != c.want {
			t.Fatalf("after run %d at %v: %d steps, want %d", c.run, c.now, bar.n, c.want)
		}
	}
}
