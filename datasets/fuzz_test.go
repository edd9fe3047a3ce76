package datasets

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// The fuzz targets feed arbitrary bytes to every reader, with and without
// the checksums (without them, mutations reach the value checks instead of
// stopping at the CRC). A reader must return data or an error, never
// panic; an error from the decode backstop (internalError) means a check
// is missing, and fails the target. The seed corpora are small valid files
// made here, plus a truncated and a flipped copy of each.

func seedFile(f *testing.F, data []byte) {
	f.Add(data)
	f.Add(data[:len(data)/2])
	b := bytes.Clone(data)
	b[len(b)/3] ^= 0xff
	f.Add(b)
	f.Add([]byte("ARROW1\x00\x00"))
}

func checkFuzzErr(t *testing.T, err error) {
	if err != nil && strings.Contains(err.Error(), internalError) {
		t.Fatal(err)
	}
}

func FuzzReadJobs(f *testing.F) {
	data, _ := smallJobs(f)
	seedFile(f, data)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			w, err := ReadWorkloadFrom("fuzz.arrow", bytes.NewReader(data), ReaderOptions{SkipChecksum: skip})
			checkFuzzErr(t, err)
			if err == nil {
				// What a reader accepts, env accepts.
				for i := range w.Jobs {
					if err := w.Jobs[i].Validate(); err != nil {
						t.Fatalf("accepted an invalid job: %v", err)
					}
				}
			}
		}
	})
}

func FuzzReadMachines(f *testing.F) {
	var buf bytes.Buffer
	if err := WriteClusterTo(&buf, testCluster(f, 25, 2), WriterOptions{BatchRows: 10}); err != nil {
		f.Fatal(err)
	}
	seedFile(f, buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			c, err := ReadClusterFrom("fuzz.arrow", bytes.NewReader(data), ReaderOptions{SkipChecksum: skip})
			checkFuzzErr(t, err)
			if err == nil {
				if err := c.Validate(); err != nil {
					t.Fatalf("accepted an invalid cluster: %v", err)
				}
			}
		}
	})
}

func FuzzReadUsage(f *testing.F) {
	var buf bytes.Buffer
	w, err := NewUsageWriter(&buf, WriterOptions{BatchRows: 2})
	if err != nil {
		f.Fatal(err)
	}
	nan := float32(math.NaN())
	for i := 0; i < 5; i++ {
		u := UsageSample{Machine: "m_1", Time: int64(10 * i), CPUUtil: 40, MemUtil: 90, MemGPS: nan, MKPI: 1, NetIn: 4, NetOut: 3, DiskIO: nan}
		if err := w.Append(&u); err != nil {
			f.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	seedFile(f, buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			r, err := NewUsageReader("fuzz.arrow", bytes.NewReader(data), ReaderOptions{SkipChecksum: skip})
			checkFuzzErr(t, err)
			if err != nil {
				continue
			}
			for r.Next() {
				for i := range r.Batch() {
					if col, err := checkUsage(&r.Batch()[i]); err != nil {
						t.Fatalf("accepted an invalid sample: column %s: %v", col, err)
					}
				}
			}
			checkFuzzErr(t, r.Err())
			r.Close()
		}
	})
}

func FuzzReadTransitions(f *testing.F) {
	// A tiny observation keeps the seed small: 2 machines, a few jobs.
	c := testCluster(f, 2, 1)
	w := testWorkload(f, c, 300, 1)
	if len(w.Jobs) > 6 {
		w.Jobs = w.Jobs[:6]
	}
	inner, _ := env.NewScheduler("bestfit")
	cp := &capture{inner: inner}
	sim, err := env.NewSim(c, w, cp, env.SimConfig{Seed: 1, Duration: 300})
	if err != nil {
		f.Fatal(err)
	}
	for !sim.Done() && len(cp.out) < 3 {
		sim.Step()
	}
	seedFile(f, writeTransitions(f, cp.out, WriterOptions{BatchRows: 2}))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			r, err := NewTransitionsReader("fuzz.arrow", bytes.NewReader(data), ReaderOptions{SkipChecksum: skip})
			checkFuzzErr(t, err)
			if err != nil {
				continue
			}
			for r.Next() {
				for i := range r.Batch() {
					if col, err := checkTransition(&r.Batch()[i]); err != nil {
						t.Fatalf("accepted an invalid transition: column %s: %v", col, err)
					}
				}
			}
			checkFuzzErr(t, r.Err())
			r.Close()
		}
	})
}

// FuzzReadAlibaba2018Usage fuzzes the machine_usage CSV reader, the one
// trace parser of this package (env's loaders have their own fuzzers).
func FuzzReadAlibaba2018Usage(f *testing.F) {
	f.Add("m_1932,386640,41,92,,,43.04,33.08,5\nm_1932,386670,43,92,,,43.04,33.08,-1\n")
	f.Add("m_1,0,0,100,0.5,1,0,0,101\n")
	f.Add("m_1,0,101,0,,,0,0,0\n")
	f.Add("m_1,x,0,0,,,0,0,0\n")
	f.Add("m_1,0,0\n")
	f.Fuzz(func(t *testing.T, data string) {
		err := ReadAlibaba2018Usage("machine_usage.csv", strings.NewReader(data), func(u *UsageSample) error {
			if col, err := checkUsage(u); err != nil {
				t.Fatalf("passed an invalid sample: column %s: %v", col, err)
			}
			return nil
		})
		var pe *env.ParseError
		if err != nil && !errors.As(err, &pe) && !strings.HasPrefix(err.Error(), "machine_usage.csv") {
			t.Fatalf("error without the file: %v", err)
		}
	})
}
