package env

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tegrl/tegrl/data"
)

// DLJob is a deep-learning training job: a job type from the throughput
// table, a gang of Scale GPUs needed at once, and a total number of steps.
// How long it runs depends on where: Steps / throughput(type, GPU type,
// Scale, consolidated or spread).
type DLJob struct {
	ID       int     // arrival order, from 0
	Model    int     // job type: index into ThroughputTable.Models
	Scale    int     // GPUs needed at once (all or nothing)
	Arrival  float64 // simulated seconds
	Steps    float64 // total work
	Duration float64 // seconds alone on the reference GPU type, consolidated
	Priority float64 // weight, 1 by default
}

// GavelWorkloadConfig configures Gavel's job generator (its
// utils.generate_job): Poisson arrivals at Rate jobs per hour; scale
// factor 1, or with Multi 1/2/4/8 with probabilities 0.7/0.1/0.15/0.05;
// duration 60·10^U(1.5,3) s with probability 0.8, else 60·10^U(3,4) s;
// job type uniform over the table's types (only types measured at the
// scale factor when it is above 1); steps = duration × throughput(type,
// scale, Reference GPU type, consolidated).
type GavelWorkloadConfig struct {
	Rate      float64 // jobs per hour, > 0
	Multi     bool    // continuous-multiple (scale factors 1-8) instead of continuous-single
	Reference string  // GPU type durations are measured on; "v100" if empty
	Seed      uint64
	// Philly, when not nil, replaces the duration and scale-factor
	// distributions with draws (uniform, with replacement) from these
	// samples; scale factors the table lacks are rejected at construction.
	Philly []PhillySample
}

// GavelGenerator produces Gavel's synthetic jobs one at a time, the same
// jobs for the same seed. Job attributes and inter-arrival gaps come from
// separate streams, CPython's Mersenne Twister seeded seed+2 and seed+3 as
// in Gavel's scheduler, drawn in the order Gavel draws them and with job
// types in the order of Gavel's job table: seed s yields the jobs of
// Gavel's simulator with seed s.
type GavelGenerator struct {
	t           *ThroughputTable
	cfg         GavelWorkloadConfig
	ref         int
	jobs, gaps  *pyRandom
	types       []int // table model indices in Gavel's job-table order
	next        int
	nextArrival float64
}

// gavelJobTable is the order of Gavel's scheduler/job_table.py, which its
// generator draws job types from.
func gavelJobTable() []string {
	var out []string
	add := func(model string, sizes ...int) {
		for _, b := range sizes {
			out = append(out, fmt.Sprintf("%s (batch size %d)", model, b))
		}
	}
	add("ResNet-18", 16, 32, 64, 128, 256)
	add("ResNet-50", 16, 32, 64, 128)
	add("Transformer", 16, 32, 64, 128, 256)
	add("LM", 5, 10, 20, 40, 80)
	add("Recommendation", 512, 1024, 2048, 4096, 8192)
	return append(out, "A3C", "CycleGAN")
}

// generatorTypes is Gavel's job-table order when the table holds exactly
// its types, else the table's (name) order.
func generatorTypes(t *ThroughputTable) []int {
	names := gavelJobTable()
	out := make([]int, 0, len(names))
	for _, n := range names {
		if m := t.Model(n); m >= 0 {
			out = append(out, m)
		}
	}
	if len(out) == len(t.Models) {
		return out
	}
	out = out[:0]
	for m := range t.Models {
		out = append(out, m)
	}
	return out
}

// NewGavelGenerator validates cfg against the table.
func NewGavelGenerator(t *ThroughputTable, cfg GavelWorkloadConfig) (*GavelGenerator, error) {
	if !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 0) {
		return nil, fmt.Errorf("gavel workload: rate must be a positive number of jobs per hour, got %v", cfg.Rate)
	}
	if cfg.Reference == "" {
		cfg.Reference = "v100"
	}
	ref, err := t.GPU(cfg.Reference)
	if err != nil {
		return nil, fmt.Errorf("gavel workload reference: %w", err)
	}
	for _, p := range cfg.Philly {
		if t.scaleIndex(p.GPUs) < 0 {
			return nil, fmt.Errorf("gavel workload: Philly sample with %d GPUs, the table has scale factors %v", p.GPUs, t.Scales)
		}
	}
	for _, sc := range []int{1, 2, 4, 8} {
		if cfg.Multi && t.scaleIndex(sc) < 0 {
			return nil, fmt.Errorf("gavel workload: multi-GPU jobs need scale factor %d in the table", sc)
		}
	}
	return &GavelGenerator{t: t, cfg: cfg, ref: ref, types: generatorTypes(t),
		jobs: newPyRandom(cfg.Seed + 2), gaps: newPyRandom(cfg.Seed + 3)}, nil
}

// CheckCluster reports, before a run, a gang the generator may draw that
// cluster c can never place: a scale factor above the most GPUs of one
// type, or a job type drawn at some scale factor that runs on no type of c
// with that many GPUs. Philly samples are named by their line in the
// distribution's CSV (header on line 1).
func (g *GavelGenerator) CheckCluster(c *GPUCluster) error {
	type draw struct {
		scale int
		what  string
	}
	var draws []draw
	switch {
	case len(g.cfg.Philly) > 0:
		seen := map[int]bool{}
		for i, p := range g.cfg.Philly {
			if !seen[p.GPUs] {
				seen[p.GPUs] = true
				draws = append(draws, draw{p.GPUs, fmt.Sprintf("Philly sample on line %d (%.0f s)", i+2, p.Duration)})
			}
		}
	case g.cfg.Multi:
		for _, sc := range []int{1, 2, 4, 8} {
			draws = append(draws, draw{sc, "continuous-multiple job"})
		}
	default:
		draws = append(draws, draw{1, "continuous-single job"})
	}
	most, name := c.LargestType()
	for _, d := range draws {
		if d.scale > most {
			return fmt.Errorf("gavel workload: a %s asks a gang of %d GPUs: the cluster has %d GPUs, at most %d of one type (%s), and a gang runs on one type",
				d.what, d.scale, c.TotalGPUs(), most, name)
		}
		for _, m := range g.types {
			if g.t.Throughput(m, g.ref, d.scale, false) <= 0 {
				continue // never drawn at this scale factor
			}
			if err := c.CheckGang(DLJob{ID: -1, Model: m, Scale: d.scale}); err != nil {
				return fmt.Errorf("gavel workload: a %s of type %s asks a gang of %d GPUs that no GPU type of the cluster (%s) runs", d.what, g.t.Models[m], d.scale, c)
			}
		}
	}
	return nil
}

// gavelScale is Gavel's _generate_scale_factor (its comparisons, in order).
func gavelScale(u float64) int {
	switch {
	case 0.7 <= u && u <= 0.8:
		return 2
	case 0.8 <= u && u <= 0.95:
		return 4
	case 0.95 <= u:
		return 8
	}
	return 1
}

// Next returns the next job.
func (g *GavelGenerator) Next() DLJob {
	r := g.jobs
	scale := gavelScale(r.uniform(0, 1)) // drawn always, as Gavel does
	var dur float64
	if len(g.cfg.Philly) > 0 {
		p := g.cfg.Philly[r.randbelow(len(g.cfg.Philly))]
		dur, scale = p.Duration, p.GPUs
	} else if r.random() >= 0.8 {
		dur = 60 * math.Pow(10, r.uniform(3, 4))
	} else {
		dur = 60 * math.Pow(10, r.uniform(1.5, 3))
	}
	if !g.cfg.Multi && len(g.cfg.Philly) == 0 {
		scale = 1
	}
	m := 0
	for tries := 0; ; tries++ {
		m = g.types[r.randbelow(len(g.types))]
		if g.t.Throughput(m, g.ref, scale, false) > 0 || tries > 1000 {
			break
		}
	}
	j := DLJob{ID: g.next, Model: m, Scale: scale, Arrival: g.nextArrival, Duration: dur, Priority: 1,
		Steps: dur * g.t.Throughput(m, g.ref, scale, false)}
	g.next++
	g.nextArrival += -math.Log(1-g.gaps.random()) / (1 / (3600 / g.cfg.Rate))
	return j
}

// PhillySample is one (duration, GPUs) pair of the Philly distribution.
type PhillySample struct {
	Duration float64 // seconds
	GPUs     int
}

// GavelPhillyDistribution loads the bundled Philly job distribution
// (data/gavel/philly_job_distribution.csv: 33,192 samples).
func GavelPhillyDistribution() ([]PhillySample, error) {
	r, err := data.Open("gavel/philly_job_distribution.csv")
	if err != nil {
		return nil, fmt.Errorf("philly distribution: %w", err)
	}
	defer r.Close()
	return LoadPhillyDistribution(r)
}

// LoadPhillyDistribution parses a duration_s,num_gpus CSV (with header).
func LoadPhillyDistribution(r io.Reader) ([]PhillySample, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 2
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("philly distribution header: %w", err)
	}
	if head[0] != "duration_s" || head[1] != "num_gpus" {
		return nil, fmt.Errorf("philly distribution: header %q, want duration_s,num_gpus", head)
	}
	var out []PhillySample
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("philly distribution: %w", err)
		}
		d, err1 := strconv.ParseFloat(rec[0], 64)
		n, err2 := strconv.Atoi(rec[1])
		if err1 != nil || err2 != nil || !(d > 0) || math.IsInf(d, 0) || n < 1 || n > MaxScale {
			return nil, fmt.Errorf("philly distribution line %d: %q: want a positive duration and 1..%d GPUs", line, rec, MaxScale)
		}
		out = append(out, PhillySample{Duration: d, GPUs: n})
	}
	if len(out) == 0 {
		return nil, errors.New("philly distribution: no samples")
	}
	return out, nil
}
