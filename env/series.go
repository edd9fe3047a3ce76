package env

import "fmt"

// DefaultSeriesMaxSamples bounds a run's time series when
// SeriesConfig.MaxSamples is 0.
const DefaultSeriesMaxSamples = 4096

// SeriesConfig switches on the recording of what a run's summary Metrics
// average away: the outcome of every completed job and a time series of the
// cluster sampled every Every ticks (for CDFs and plots over time, as in
// tegrl ab). The zero value records nothing, so a run that does not ask
// costs nothing: no allocation, one nil check per tick and per completion.
type SeriesConfig struct {
	// Every samples the time series at the end of every tick whose number
	// is a multiple of it; 0 turns recording off (job outcomes included).
	Every int
	// MaxSamples bounds the time series (0: DefaultSeriesMaxSamples; at
	// least 2). When it is full, every other sample is dropped and the
	// interval doubles, so a long run keeps an even grid in bounded memory.
	MaxSamples int
}

func (c *SeriesConfig) validate() error {
	if c.Every < 0 || c.MaxSamples < 0 || c.MaxSamples == 1 {
		return fmt.Errorf("series every %d ticks, max %d samples: want every >= 0 and max 0 (default) or >= 2", c.Every, c.MaxSamples)
	}
	return nil
}

// SeriesSample is the cluster at the end of one tick. Utilisations are of
// the capacity of machines that are up, as in Metrics.
type SeriesSample struct {
	Tick        int     `json:"tick"`
	TimeS       float64 `json:"time_s"`
	UtilCPU     float64 `json:"util_cpu"`      // CPU allocated / capacity
	UtilGPU     float64 `json:"util_gpu"`      // GPU allocated / capacity
	GPUFragRate float64 `json:"gpu_frag_rate"` // F(M) / GPU capacity
	Damping     float64 `json:"damping"`       // the controller's γ
	QueueLen    int     `json:"queue_len"`     // jobs waiting
}

// JobOutcome is one completed job.
type JobOutcome struct {
	ID       int     `json:"id"`    // index in the run's workload (replicas added by actions follow the input jobs)
	EndS     float64 `json:"end_s"` // simulated time it completed
	JCTS     float64 `json:"jct_s"` // completion time: end - arrival, queueing included
	Slowdown float64 `json:"slowdown"`
}

// Series is what a run recorded under SeriesConfig: job outcomes in
// completion order and samples in time order.
type Series struct {
	// Every is the sampling interval in ticks now (it doubles each time the
	// series is thinned to stay within MaxSamples).
	Every   int
	Samples []SeriesSample
	Jobs    []JobOutcome
	max     int
}

// Series returns what the run has recorded so far, or nil when
// SimConfig.Series is off. It is the Sim's own record: read it, do not
// change it, and copy what must outlive the next Step.
func (s *Sim) Series() *Series { return s.series }

// newSeries prepares the record of a run, nil when recording is off.
func newSeries(cfg *SimConfig, jobs int) *Series {
	if cfg.Series.Every == 0 {
		return nil
	}
	sr := &Series{Every: cfg.Series.Every, max: cfg.Series.MaxSamples}
	if sr.max == 0 {
		sr.max = DefaultSeriesMaxSamples
	}
	n := sr.max
	if cfg.Duration > 0 {
		n = min(n, int(cfg.Duration/cfg.Tick)/sr.Every+1)
	}
	sr.Samples = make([]SeriesSample, 0, n)
	sr.Jobs = make([]JobOutcome, 0, jobs)
	return sr
}

// seriesJob records the outcome of job id, completed now after jct seconds.
func (s *Sim) seriesJob(id int, jct, slowdown float64) {
	if s.series == nil {
		return
	}
	s.series.Jobs = append(s.series.Jobs, JobOutcome{ID: id, EndS: s.now, JCTS: jct, Slowdown: slowdown})
}

// seriesTick records a sample at the end of a stepped tick on the grid.
func (s *Sim) seriesTick() {
	if s.series == nil || s.ticks%s.series.Every != 0 {
		return
	}
	s.series.add(s.sample())
}

// seriesSkip records the samples of the k ticks skipIdle is about to jump
// over: nothing but time changes in them, so each is the present state at
// its own time.
func (s *Sim) seriesSkip(k int) {
	if s.series == nil {
		return
	}
	var smp SeriesSample
	have := false
	for t := s.ticks + 1; t <= s.ticks+k; t++ {
		if t%s.series.Every != 0 {
			// Jump to the next multiple; the interval may have doubled.
			t += s.series.Every - t%s.series.Every - 1
			continue
		}
		if !have {
			smp, have = s.sample(), true
		}
		smp.Tick, smp.TimeS = t, s.now+float64(t-s.ticks)*s.cfg.Tick
		s.series.add(smp)
	}
}

// sample reads the cluster now. The fragmentation is summed afresh from the
// machines' cached values (recomputing those that changed since) without
// updating the cache: the running total and the cache belong to the
// metrics and the Langevin scheduler, whose results must not depend on
// whether a series is recorded.
func (s *Sim) sample() SeriesSample {
	st := s.state
	smp := SeriesSample{Tick: s.ticks, TimeS: s.now, Damping: s.ctl.d, QueueLen: s.tq.n}
	if st.CapCPU > 0 {
		smp.UtilCPU = float64(st.UsedCPU) / float64(st.CapCPU)
	}
	if st.CapGPU > 0 {
		smp.UtilGPU = float64(st.UsedGPU) / float64(st.CapGPU)
		frag := 0.0
		for i := range s.ld.hot {
			if fc := &s.ld.hot[i].fc; fc.ver == st.M[i].Ver {
				frag += fc.val
			} else {
				frag += st.MachineFrag(i)
			}
		}
		smp.GPUFragRate = frag / float64(st.CapGPU)
	}
	return smp
}

// add appends a sample, first thinning a full series to the samples on
// the doubled grid.
func (sr *Series) add(smp SeriesSample) {
	if len(sr.Samples) == sr.max {
		sr.Every *= 2
		kept := sr.Samples[:0]
		for _, x := range sr.Samples {
			if x.Tick%sr.Every == 0 {
				kept = append(kept, x)
			}
		}
		sr.Samples = kept
		if smp.Tick%sr.Every != 0 {
			return
		}
	}
	sr.Samples = append(sr.Samples, smp)
}
