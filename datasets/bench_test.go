package datasets

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
)

// One op writes or reads a whole file; rows/s and MB/s (SetBytes: the
// file's size) are per second of the op.

func reportRows(b *testing.B, rows int) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// benchTransitions captures n decisions of a run on a synthetic cluster.
func benchTransitions(b *testing.B, machines, n int) []Transition {
	b.Helper()
	trs := captured(b, machines, 3600, n)
	runtime.GC()
	return trs
}

func BenchmarkWriteTransitions(b *testing.B) {
	for _, machines := range []int{128} {
		b.Run(fmt.Sprintf("machines=%d", machines), func(b *testing.B) {
			trs := benchTransitions(b, machines, 256)
			var buf bytes.Buffer
			size := len(writeTransitions(b, trs, WriterOptions{}))
			buf.Grow(size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf.Reset()
				w, err := NewTransitionsWriter(&buf, WriterOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for k := range trs {
					if err := w.Append(&trs[k]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			reportRows(b, len(trs))
		})
	}
}

func BenchmarkReadTransitions(b *testing.B) {
	for _, machines := range []int{128} {
		b.Run(fmt.Sprintf("machines=%d", machines), func(b *testing.B) {
			trs := benchTransitions(b, machines, 256)
			data := writeTransitions(b, trs, WriterOptions{})
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := NewTransitionsReader("t", bytes.NewReader(data), ReaderOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for r.Next() {
					n += len(r.Batch())
				}
				if r.Err() != nil || n != len(trs) {
					b.Fatalf("%d rows, %v", n, r.Err())
				}
				r.Close()
			}
			reportRows(b, len(trs))
		})
	}
}

func BenchmarkWriteJobs(b *testing.B) {
	c := testCluster(b, 1000, 1)
	w := testWorkload(b, c, 6*3600, 1)
	var buf bytes.Buffer
	if err := WriteWorkloadTo(&buf, w, WriterOptions{}); err != nil {
		b.Fatal(err)
	}
	size := buf.Len()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := WriteWorkloadTo(&buf, w, WriterOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, len(w.Jobs))
	b.ReportMetric(float64(len(w.Jobs)), "jobs")
}

func BenchmarkReadJobs(b *testing.B) {
	c := testCluster(b, 1000, 1)
	w := testWorkload(b, c, 6*3600, 1)
	var buf bytes.Buffer
	if err := WriteWorkloadTo(&buf, w, WriterOptions{}); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := NewJobsReader("jobs", bytes.NewReader(data), ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n += len(r.Batch())
		}
		if r.Err() != nil || n != len(w.Jobs) {
			b.Fatalf("%d jobs, %v", n, r.Err())
		}
		r.Close()
	}
	reportRows(b, len(w.Jobs))
}
