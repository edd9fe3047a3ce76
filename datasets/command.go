package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/tegrl/tegrl/env"
)

// ConvertCommand is tegrl dataset convert as its command line gives it.
// Run converts the trace and prints the files written and their counts.
type ConvertCommand struct {
	From         string  `flag:"from" usage:"trace to convert: alibaba-gpu[:DIR], alibaba-2018:DIR or alibaba-batch[:FILE] (no DIR or FILE: the bundled copy)"`
	Out          string  `flag:"out" usage:"output folder (created if missing)"`
	Compress     float64 `flag:"compress" default:"1" usage:"time-compression factor (arrivals and durations divided by it)"`
	MaxInstances int     `flag:"max-instances" default:"1" usage:"instances per 2018 batch task turned into jobs (0: all 2.5M)"`
	BatchRows    int     `flag:"batch-rows" usage:"rows per Arrow record batch"`
	JSON         bool    `flag:"json" usage:"print one JSON object instead of text"`

	Logger *slog.Logger // nil: no logs
}

// DefaultConvertCommand is tegrl dataset convert's defaults.
func DefaultConvertCommand() ConvertCommand { return ConvertCommand{BatchRows: DefaultBatchRows} }

// Run converts From into Out (ConvertSpec) and prints the result to w.
func (c ConvertCommand) Run(w io.Writer) error {
	res, err := ConvertSpec(c.From, c.Out, ConvertOptions{Compress: c.Compress, MaxInstances: c.MaxInstances,
		Writer: WriterOptions{BatchRows: c.BatchRows}, Log: c.Logger})
	if err != nil {
		return err
	}
	return res.write(w, c.JSON)
}

// GenCommand is tegrl dataset gen as its command line gives it. Run
// writes the synthetic cluster and workload and prints what it wrote.
type GenCommand struct {
	Out       string  `flag:"out" usage:"output folder (created if missing)"`
	Machines  int     `flag:"machines" default:"1000" usage:"machines of the synthetic cluster"`
	Seed      uint64  `flag:"seed" default:"1" usage:"seed of the cluster and workload"`
	Load      float64 `flag:"load" usage:"offered load (fraction of the busier of CPU and GPU capacity)"`
	Duration  string  `flag:"duration" default:"6h" usage:"span of arrivals (Go duration such as 6h, or seconds)"`
	BatchRows int     `flag:"batch-rows" usage:"rows per Arrow record batch"`
	JSON      bool    `flag:"json" usage:"print one JSON object instead of text"`

	Logger *slog.Logger
}

// DefaultGenCommand is tegrl dataset gen's defaults: the default
// workload's load and the default batch size.
func DefaultGenCommand() GenCommand {
	return GenCommand{Load: env.DefaultWorkload.Load, BatchRows: DefaultBatchRows}
}

// Run checks the duration, generates into Out (Generate) and prints the
// result to w.
func (c GenCommand) Run(w io.Writer) error {
	horizon, err := env.ParseSeconds(c.Duration)
	if err != nil {
		return err
	}
	if horizon <= 0 {
		return fmt.Errorf("--duration %q: the workload needs a positive horizon", c.Duration)
	}
	res, err := Generate(c.Out, GenConfig{Machines: c.Machines, Seed: c.Seed,
		Workload: env.WorkloadConfig{Horizon: horizon, Load: c.Load}, Writer: WriterOptions{BatchRows: c.BatchRows}})
	if err != nil {
		return err
	}
	logger(c.Logger).Info("generated", "machines", res.Machines, "jobs", res.Jobs, "out", c.Out)
	return res.write(w, c.JSON)
}

// write prints r to w: one JSON object, or the files and a line of counts.
func (r Converted) write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	for _, f := range r.Files {
		fmt.Fprintln(w, f)
	}
	fmt.Fprintf(w, "%d machines, %d jobs, %d usage samples\n", r.Machines, r.Jobs, r.Usage)
	return nil
}

// InspectCommand is tegrl dataset inspect as its command line gives it.
type InspectCommand struct {
	JSON bool `flag:"json" usage:"print one JSON object instead of text"`
}

// Run prints the summary of the dataset at path to w (Inspect). A file
// that does not check out is printed, then an error.
func (c InspectCommand) Run(path string, w io.Writer) error {
	s, err := Inspect(path)
	if err != nil {
		return err
	}
	if c.JSON {
		err = json.NewEncoder(w).Encode(s)
	} else {
		err = s.WriteText(w)
	}
	if err != nil {
		return err
	}
	if !s.Valid {
		return errors.New(s.Error)
	}
	return nil
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
