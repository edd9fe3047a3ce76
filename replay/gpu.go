package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// Files of a GPU-cluster recording (RecordGPU).
const (
	GPURunFile         = "gpu-run.json"
	GPUJobsFile        = "dljobs.arrow"
	GPUAllocationsFile = "allocations.arrow"
)

// GPURunConfig is what a GPU-cluster recording needs to be re-run: the
// scenario, rate or load, policy, seed and the run's bounds.
type GPURunConfig struct {
	Scenario       string  `json:"scenario"`
	Rate           float64 `json:"rate_jobs_per_h"`
	Load           float64 `json:"offered_gpu_load"`
	Policy         string  `json:"scheduler"`
	Seed           uint64  `json:"seed"`
	RestoreSeconds float64 `json:"restore_s"`
	// AllocationSeconds is the least time between two allocations (0:
	// Gavel's 1,920 s).
	AllocationSeconds float64 `json:"allocation_interval_s,omitempty"`
	Placement         string  `json:"placement,omitempty"`
	WarmupHours       float64 `json:"warmup_h"`
	MeasureJobs       int     `json:"measure_jobs"`
	GraceHours        float64 `json:"grace_h"`
}

// RunConfig is the run c describes, for report.RunGPU.
func (c GPURunConfig) RunConfig() report.GPURunConfig {
	return report.GPURunConfig{Scenario: c.Scenario, Rate: c.Rate, Load: c.Load, Policy: c.Policy, Seed: c.Seed,
		RestoreSeconds: c.RestoreSeconds, AllocationSeconds: c.AllocationSeconds, Placement: c.Placement, WarmupHours: c.WarmupHours, MeasureJobs: c.MeasureJobs, GraceHours: c.GraceHours}
}

// GPURecording is a GPU-cluster recording's gpu-run.json: its
// configuration, its final metrics and how many rows each file holds.
type GPURecording struct {
	Config      GPURunConfig      `json:"config"`
	Metrics     report.GPUMetrics `json:"metrics"`
	Jobs        int64             `json:"jobs"`
	Allocations int64             `json:"allocations"`
}

// IsGPURecording reports whether dir holds a GPU-cluster recording.
func IsGPURecording(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, GPURunFile))
	return err == nil
}

// allocationRows turns one allocation into rows: each (job, GPU type)
// with a positive share.
func allocationRows(index int32, s *env.RoundState, x []float64, emit func(datasets.Allocation)) {
	nt := len(s.Types)
	for i := range s.Jobs {
		for j, name := range s.Types {
			if f := x[i*nt+j]; f > 0 {
				emit(datasets.Allocation{Index: index, TimeS: s.Time, Job: int32(s.Jobs[i].ID), GPUType: name, Fraction: f})
			}
		}
	}
}

// RecordGPU runs cfg and writes to dir the jobs it drew (dljobs.arrow),
// every allocation the policy computed (allocations.arrow) and
// gpu-run.json. ReplayGPU re-runs it.
func RecordGPU(dir string, cfg GPURunConfig) (*GPURecording, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, err
	}
	jw, err := datasets.CreateDLJobs(filepath.Join(dir, GPUJobsFile), tab, datasets.WriterOptions{})
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	aw, err := datasets.CreateAllocations(filepath.Join(dir, GPUAllocationsFile), datasets.WriterOptions{})
	if err != nil {
		jw.Close()
		return nil, fmt.Errorf("record: %w", err)
	}
	var werr error
	index := int32(0)
	rc := cfg.RunConfig()
	rc.OnJob = func(j env.DLJob) {
		if werr == nil {
			werr = jw.Append(j)
		}
	}
	rc.OnAllocate = func(s *env.RoundState, x []float64) {
		allocationRows(index, s, x, func(a datasets.Allocation) {
			if werr == nil {
				werr = aw.Append(a)
			}
		})
		index++
	}
	m, err := report.RunGPU(rc)
	err = errors.Join(err, werr, jw.Close(), aw.Close())
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", dir, err)
	}
	rec := &GPURecording{Config: cfg, Metrics: m, Jobs: jw.Rows(), Allocations: aw.Rows()}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, GPURunFile), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return rec, nil
}

// OpenGPU reads a GPU-cluster recording's gpu-run.json.
func OpenGPU(dir string) (*GPURecording, error) {
	b, err := os.ReadFile(filepath.Join(dir, GPURunFile))
	if err != nil {
		return nil, fmt.Errorf("open GPU recording: %w", err)
	}
	var rec GPURecording
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("open GPU recording %s: %s: %w", dir, GPURunFile, err)
	}
	if rec.Config.Policy == "" || rec.Config.Scenario == "" {
		return nil, fmt.Errorf("open GPU recording %s: %s names no scenario or scheduler", dir, GPURunFile)
	}
	return &rec, nil
}

// GPUDivergence is the first allocation row where a replay left the
// recording: the recorded row and the replayed one (nil where one of the
// runs has no more rows).
type GPUDivergence struct {
	Row      int64                `json:"row"`
	Recorded *datasets.Allocation `json:"recorded"`
	Replayed *datasets.Allocation `json:"replayed"`
}

// GPUReplay is the outcome of ReplayGPU.
type GPUReplay struct {
	Dir       string            `json:"trace"`
	Scheduler string            `json:"scheduler"`
	Recorded  report.GPUMetrics `json:"recorded"`
	Replayed  report.GPUMetrics `json:"replayed"`
	// Verified is true when the recorded scheduler was replayed: then
	// Reproduced says whether every allocation row and the metrics' JSON
	// matched, and Divergence (if any) where it first did not.
	Verified   bool           `json:"verified"`
	Reproduced bool           `json:"reproduced"`
	Divergence *GPUDivergence `json:"divergence,omitempty"`
	// MetricsDiffer is true when a verified replay's metrics JSON is not
	// the recorded one.
	MetricsDiffer bool `json:"metrics_differ"`
}

// ReplayGPU re-runs a GPU-cluster recording on its recorded jobs under
// policy ("" for the recorded one). Under the recorded policy every
// allocation is compared, as the recording streams, with the recorded
// rows, and the final metrics with the recorded ones byte for byte.
func ReplayGPU(dir, policy string) (*GPUReplay, error) {
	rec, err := OpenGPU(dir)
	if err != nil {
		return nil, err
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, err
	}
	jobs, err := datasets.ReadDLJobs(filepath.Join(dir, GPUJobsFile), tab, datasets.ReaderOptions{})
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", dir, err)
	}
	if int64(len(jobs)) != rec.Jobs {
		return nil, fmt.Errorf("replay %s: %s has %d jobs, %s says %d: the files do not belong together", dir, GPUJobsFile, len(jobs), GPURunFile, rec.Jobs)
	}
	list, err := env.NewJobList(tab, jobs)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", dir, err)
	}
	out := &GPUReplay{Dir: dir, Scheduler: policy, Recorded: rec.Metrics}
	if policy == "" || policy == rec.Config.Policy {
		out.Scheduler, out.Verified = rec.Config.Policy, true
	}
	rc := rec.Config.RunConfig()
	rc.Policy, rc.Jobs = out.Scheduler, list
	var cmp *allocCompare
	if out.Verified {
		r, err := datasets.OpenAllocations(filepath.Join(dir, GPUAllocationsFile), datasets.ReaderOptions{})
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", dir, err)
		}
		defer r.Close()
		cmp = &allocCompare{r: r}
		index := int32(0)
		rc.OnAllocate = func(s *env.RoundState, x []float64) {
			allocationRows(index, s, x, cmp.check)
			index++
		}
	}
	if out.Replayed, err = report.RunGPU(rc); err != nil {
		return nil, fmt.Errorf("replay %s: %w", dir, err)
	}
	if !out.Verified {
		return out, nil
	}
	cmp.finish()
	if cmp.err != nil {
		return nil, fmt.Errorf("replay %s: %s: %w", dir, GPUAllocationsFile, cmp.err)
	}
	if cmp.rows != rec.Allocations && cmp.div == nil {
		return nil, fmt.Errorf("replay %s: %s has %d rows, %s says %d: the files do not belong together", dir, GPUAllocationsFile, cmp.rows, GPURunFile, rec.Allocations)
	}
	a, _ := json.Marshal(out.Recorded)
	b, _ := json.Marshal(out.Replayed)
	out.MetricsDiffer = !bytes.Equal(a, b)
	out.Divergence = cmp.div
	out.Reproduced = cmp.div == nil && !out.MetricsDiffer
	return out, nil
}

// allocCompare streams the recorded allocation rows against the
// replayed ones and keeps the first divergence.
type allocCompare struct {
	r     *datasets.AllocationsReader
	batch []datasets.Allocation
	at    int
	rows  int64 // recorded rows read
	seen  int64 // replayed rows checked
	div   *GPUDivergence
	err   error
	done  bool
}

// next returns the next recorded row, or nil at the end.
func (c *allocCompare) next() *datasets.Allocation {
	for c.at >= len(c.batch) {
		if c.done || !c.r.Next() {
			c.done = true
			if c.err == nil {
				c.err = c.r.Err()
			}
			return nil
		}
		c.batch, c.at = c.r.Batch(), 0
	}
	c.at++
	c.rows++
	a := c.batch[c.at-1]
	return &a
}

func (c *allocCompare) check(got datasets.Allocation) {
	if c.div != nil || c.err != nil {
		return
	}
	want := c.next()
	if want == nil || *want != got {
		g := got
		c.div = &GPUDivergence{Row: c.seen, Recorded: want, Replayed: &g}
	}
	c.seen++
}

// finish reads what the replay did not produce: rows left over are a
// divergence at the first of them.
func (c *allocCompare) finish() {
	if c.div != nil || c.err != nil {
		return
	}
	if want := c.next(); want != nil {
		c.div = &GPUDivergence{Row: c.seen, Recorded: want}
	}
}

// Failure is an error when a verified replay did not reproduce.
func (r *GPUReplay) Failure() error {
	if r.Verified && !r.Reproduced {
		return fmt.Errorf("replay of %s under %s did not reproduce the recording", r.Dir, r.Scheduler)
	}
	return nil
}

// WriteJSON writes the replay as one JSON object.
func (r *GPUReplay) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteText writes the replay for people: the verdict, then recorded and
// replayed metrics side by side.
func (r *GPUReplay) WriteText(w io.Writer) error {
	switch {
	case r.Verified && r.Reproduced:
		fmt.Fprintf(w, "reproduced: %s on %s, every allocation and the metrics byte for byte\n", r.Scheduler, r.Recorded.Scenario)
	case r.Verified && r.Divergence != nil:
		d := r.Divergence
		fmt.Fprintf(w, "NOT reproduced: allocation row %d differs\n  recorded: %s\n  replayed: %s\n", d.Row, allocText(d.Recorded), allocText(d.Replayed))
	case r.Verified:
		fmt.Fprintln(w, "NOT reproduced: the allocations match but the metrics differ")
	default:
		fmt.Fprintf(w, "%s replayed on the jobs recorded under %s (%s)\n", r.Scheduler, r.Recorded.Scheduler, r.Recorded.Scenario)
	}
	a, b := r.Recorded, r.Replayed
	a.Scheduler, b.Scheduler = "recorded: "+a.Scheduler, "replayed: "+b.Scheduler
	return report.WriteGPUTable(w, []report.GPUMetrics{a, b})
}

func allocText(a *datasets.Allocation) string {
	if a == nil {
		return "(no more rows)"
	}
	return fmt.Sprintf("allocation %d at %.0f s: job %d on %s, share %s", a.Index, a.TimeS, a.Job, a.GPUType,
		formatShare(a.Fraction))
}

func formatShare(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.6g", f)
}
