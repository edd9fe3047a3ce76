package env

import (
	"fmt"
	"io"
)

// SourceSpec says what to simulate and for how long: the cluster and
// workload specs and the run's settings, as tegrl simulate, lookahead and
// dataset record take them from their flags. Build turns it into the
// cluster, the workload and the run's configuration.
type SourceSpec struct {
	Machines, Ticks, MaxInstances int
	// Cluster and Workload are specs (ParseClusterSpec, ParseWorkloadSpec);
	// Duration is a length for ParseSeconds ("": the synthetic horizon, a
	// trace's window, or until a trace drains).
	Cluster, Workload, Duration string
	Tick, Load, Compress, MTBF  float64
	Seed                        uint64
	// Cut, when set, seeds the synthetic cluster apart from Seed and cuts
	// and scales a trace workload; without it the cluster has Seed.
	Cut *TraceCut
}

// TraceCut seeds the synthetic cluster apart from the workload and cuts
// and scales a trace workload.
type TraceCut struct {
	ClusterSeed uint64
	// Start and Window keep the trace's jobs arriving in [Start,
	// Start+Window) (lengths for ParseSeconds; "": from the first job, to
	// the end).
	Start, Window string
	// TickSet keeps Tick as given for a trace workload (else it is divided
	// by the compression); LoadSet makes Load a target offered load of the
	// trace's jobs (resampled or thinned to it).
	TickSet, LoadSet bool
}

// Build builds the cluster, the workload and the run's configuration
// (without its TEG part), and describes them on info when it is not nil.
func (s SourceSpec) Build(info io.Writer) (*Cluster, *Workload, SimConfig, error) {
	cfg := SimConfig{Seed: s.Seed, Tick: s.Tick, MaxTicks: s.Ticks, MTBF: s.MTBF}
	cs, err := ParseClusterSpec(s.Cluster)
	if err != nil {
		return nil, nil, cfg, err
	}
	cs.Machines, cs.Seed = s.Machines, s.Seed
	ws, err := ParseWorkloadSpec(s.Workload)
	if err != nil {
		return nil, nil, cfg, err
	}
	ws.Seed, ws.Config.Load, ws.Compress, ws.MaxInstances = s.Seed, s.Load, s.Compress, s.MaxInstances
	if err := s.applyCut(&cs, &ws); err != nil {
		return nil, nil, cfg, err
	}
	c, err := cs.Load()
	if err != nil {
		return nil, nil, cfg, fmt.Errorf("load cluster: %w", err)
	}
	w, err := ws.Load(c)
	if err != nil {
		return nil, nil, cfg, fmt.Errorf("load workload: %w", err)
	}
	switch {
	case s.Duration != "":
		if cfg.Duration, err = ParseSeconds(s.Duration); err != nil {
			return nil, nil, cfg, err
		}
	case ws.Source == "synthetic":
		cfg.Duration = ws.Config.Horizon
	}
	if ws.Source != "synthetic" {
		if s.Cut == nil || !s.Cut.TickSet { // the tick scales with the compression unless given
			cfg.Tick = ws.Tick(cfg.Tick)
		}
		if s.Duration == "" && ws.Window.Length > 0 {
			cfg.Duration = ws.Window.Length / ws.Compress
		}
	}
	if info != nil {
		fmt.Fprintln(info, cs.Describe(c))
		if ws.Source != "synthetic" {
			fmt.Fprintln(info, DescribeTraceLoad(w, c, ws.TraceLoad))
		}
	}
	return c, w, cfg, nil
}

// applyCut sets the cluster seed, the window, and for trace workloads the
// target offered load (the synthetic workload reads Load itself).
func (s SourceSpec) applyCut(cs *ClusterSpec, ws *WorkloadSpec) error {
	t := s.Cut
	if t == nil {
		return nil
	}
	cs.Seed = t.ClusterSeed
	if ws.Source == "synthetic" {
		if t.Start != "" || t.Window != "" {
			return fmt.Errorf("--start and --window cut trace workloads; the synthetic workload has --duration")
		}
		return nil
	}
	var err error
	if t.Start != "" {
		if ws.Window.Start, err = ParseSeconds(t.Start); err != nil {
			return fmt.Errorf("--start: %w", err)
		}
	}
	if t.Window != "" {
		if ws.Window.Length, err = ParseSeconds(t.Window); err != nil || ws.Window.Length == 0 {
			return fmt.Errorf("--window %q: want a positive length (leave it out for the whole trace)", t.Window)
		}
	}
	if t.LoadSet {
		ws.TraceLoad = s.Load
	}
	return nil
}
