// Command tegrl trains and serves learned cluster schedulers: the cluster
// simulator (simulate), the TEG parameter search (tune), the FGD GPU
// saturation experiment (saturate), training (train, actor, broker),
// evaluation (ab, replay), datasets (dataset) and the scheduling service
// (serve).
//
// This package holds flags, help and printing only; the work is done by the
// packages it calls (env, rl, report, serve, ...). Each subcommand (but
// version, below) lives in its own file and registers its constructor with
// addCommand from an init function, so a new command needs no edit here.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/report"
)

// app is the state shared by the root command and its subcommands.
type app struct {
	stdout, stderr io.Writer
	argv           []string // the command line as typed, argv[0] = "tegrl"
	logLevel       string
	logFormat      string
	// log is the logger of the running command: stderr, with the level and
	// format of --log-level and --log-format. Set before any RunE.
	log *slog.Logger
}

// commands holds the subcommand constructors registered with addCommand.
var commands []func(*app) *cobra.Command

// addCommand registers a subcommand constructor; call it from init.
func addCommand(newCmd func(*app) *cobra.Command) {
	commands = append(commands, newCmd)
}

// rootLong is the help text of tegrl.
const rootLong = `tegrl trains and serves learned cluster schedulers.

It models a cluster (machines, GPUs, racks, network) and its workload (jobs
from synthetic generators or public traces such as Alibaba's GPU cluster
trace), and compares placement policies on it: classic baselines (random,
best-fit, dot product, GPU packing, GPU clustering, FGD, kube-scheduler's
default, power of two choices) and the Thermo-Economic Governor's pure
Langevin dynamics, and learns placement and damping policies with PPO and
IMPALA-style actors over NATS.

Commands available today:
  simulate   run the cluster simulator (with the TEG dynamics: potential
             field, Langevin moves, safety layer, damping controller,
             tokens) on a workload with one or more schedulers and report
             job, utilisation, energy, safety and reward metrics
  tune       grid-search a scheduler's TEG parameters on training seeds,
             ranked by mean reward
  saturate   the FGD GPU saturation experiment: fill the GPU cluster with
             pods that never finish and compare allocation and fragmentation
  gavel      Gavel's continuous-jobs experiment on a heterogeneous GPU
             training cluster: average JCT of allocation policies by rate
  train      learn a policy: PPO + V-trace with actors over NATS, or offline
             from recorded runs (--offline)
  distill    distil a trained policy into a smaller student
  actor      an actor process for a train learner on a NATS server
  broker     a stand-alone NATS server (JetStream, token auth) for training
  ab         paired A/B comparison of two schedulers or policies, with
             bootstrap confidence intervals, a report and plots
  dataset    convert traces, generate workloads, record transitions of any
             scheduler and inspect Arrow datasets
  replay     re-run a recorded run under any scheduler, byte for byte, and
             diff two schedulers' decisions
  serve      the real-time scheduling service: decisions over HTTP, the
             Kubernetes scheduler extender, hot-loaded policies, A/B arms

Results go to stdout (text tables, or JSON with --json); logs go to stderr.
A progress bar appears on long work when stderr is a terminal.`

// newRootCmd builds the tegrl command tree writing to a.stdout and a.stderr.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "tegrl",
		Short:         "Train and serve learned cluster schedulers",
		Long:          rootLong,
		Version:       report.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			log, err := report.NewLogger(a.stderr, a.logLevel, a.logFormat)
			if err != nil {
				return err
			}
			a.log = log
			return nil
		},
	}
	root.SetVersionTemplate("tegrl {{.Version}}\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.logLevel, "log-level", "info", "log verbosity on stderr: debug, info, warn or error")
	pf.StringVar(&a.logFormat, "log-format", "text", "log format on stderr: text (key=value) or json (one object per line)")
	for _, newCmd := range commands {
		root.AddCommand(newCmd(a))
	}
	return root
}

// execute runs tegrl with args (without the program name).
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a := &app{stdout: stdout, stderr: stderr, argv: append([]string{"tegrl"}, args...)}
	root := newRootCmd(a)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tegrl:", err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

func init() { addCommand(newVersionCmd) }

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tegrl's version: module version, commit, build time and Go version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(a.stdout, "tegrl %s\n", report.Version())
			return nil
		},
	}
}
