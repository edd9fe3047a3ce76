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

// newRootCmd builds the tegrl command tree writing to a.stdout and a.stderr.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "tegrl",
		Short:         "Train and serve learned cluster schedulers",
		Long:          helpText("tegrl"),
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
