package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/distill"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newDistillCmd) }

func newDistillCmd(a *app) *cobra.Command {
	tp := &tieredSupport{}
	r := &distill.Command{RunConfig: distill.RunConfig{Env: rl.EnvSpec{Machines: rl.SmallMachines, Load: rl.SmallLoad, Episode: rl.SmallEpisode}}}
	cmd := &cobra.Command{
		Use:     "distill",
		Short:   "Distil a trained policy into a smaller student (KL at T=2 on placement, moment matching on the Beta heads, value)",
		Long:    helpText("distill"),
		Example: exampleText("distill"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tieredTeacher(r.Teacher) {
				var bad error
				cmd.Flags().Visit(func(f *pflag.Flag) {
					switch {
					case slices.Contains(tieredOnlyFlags, f.Name):
					case f.Name == "teacher", f.Name == "out", f.Name == "eval-seeds", f.Name == "json", f.Name == "log-level", f.Name == "log-format":
					default:
						if bad == nil {
							bad = fmt.Errorf("--%s does not apply to a tiered teacher (%s)", f.Name, r.Teacher)
						}
					}
				})
				if bad != nil {
					return bad
				}
				seeds := "0-2"
				if cmd.Flags().Changed("eval-seeds") {
					seeds = r.Seeds
				}
				return runDistillTiered(cmd, a, r.Teacher, r.Out, seeds, tp, r.JSON)
			}
			for _, name := range tieredOnlyFlags {
				if cmd.Flags().Changed(name) {
					return fmt.Errorf("--%s applies to a tiered teacher only (%s is not one)", name, r.Teacher)
				}
			}
			r.Command = report.CommandLine(a.argv)
			return r.Run(cmd.Context(), a.stdout)
		},
	}
	fl, def := cmd.Flags(), distill.DefaultConfig(rl.PolicyConfig{})
	flagtag.Bind(fl, r)
	fl.IntVar(&r.Hidden, "hidden", def.Student.Hidden, "student width (the teacher's inputs, candidates and heads)")
	fl.IntVar(&r.Decisions, "decisions", rl.DistillDecisions, "teacher decisions to learn from")
	fl.IntVar(&r.Rounds, "rounds", rl.DistillRounds, "online rounds (act, label, refit)")
	fl.IntVar(&r.Epochs, "epochs", def.Epochs, "passes over them")
	fl.IntVar(&r.Env.Machines, "machines", r.Env.Machines, "machines of the synthetic training cluster")
	fl.Float64Var(&r.Env.Load, "load", r.Env.Load, "offered load")
	fl.Float64Var(&r.Env.Episode, "episode", r.Env.Episode, "simulated seconds per episode")
	fl.StringVar(&r.Seeds, "eval-seeds", rl.EvalSeeds, "held-out seeds comparing teacher, student and langevin (\"\" skips; a tiered teacher: 0-2, compared with max_min_fairness_packed)")
	fl.IntVar(&tp.pairs, "support-pairs", distill.DefaultSupportPairs, "a tiered teacher: the most-used pair columns its student keeps")
	fl.IntVar(&tp.alone, "support-alone", distill.DefaultSupportAlone, "a tiered teacher: the most-used alone columns its student keeps")
	fl.Float64Var(&tp.maxLoad, "support-max-log-load", distill.DefaultSupportMaxLogLoad, "a tiered teacher: past this cluster load (log of GPUs asked over GPUs) its student uses a support of the teacher's columns at those loads (inf: one support at every load)")
	fl.IntVar(&tp.highPairs, "support-high-pairs", distill.DefaultSupportHighPairs, "a tiered teacher: the most-used pair columns past --support-max-log-load its student keeps")
	fl.IntVar(&tp.highAlone, "support-high-alone", distill.DefaultSupportHighAlone, "a tiered teacher: the most-used alone columns past --support-max-log-load its student keeps")
	fl.BoolVar(&tp.highFull, "support-high-full", false, "a tiered teacher: its student solves the full LP past --support-max-log-load")
	fl.StringVar(&tp.scenario, "scenario", "", "a tiered teacher: the GPU scenario to distil on (CLUSTER-WORKLOAD, as tegrl simulate --scenario; \"\": gavel-single at its rates), with --train-loads")
	fl.Float64SliceVar(&tp.trainLoads, "train-loads", nil, "a tiered teacher: offered loads of the teacher's runs, in place of the single-GPU protocol's rates")
	fl.Float64SliceVar(&tp.evalLoads, "eval-loads", nil, "a tiered teacher: offered loads of the evaluation (default: --train-loads)")
	fl.BoolVar(&tp.price, "support-price", false, "a tiered teacher: columns outside its student's support enter when they improve the LP (the teacher's optimum, solved from the support outwards)")
	return cmd
}

// tieredOnlyFlags are the flags of a tiered teacher's distillation,
// refused with any other teacher.
var tieredOnlyFlags = []string{"support-pairs", "support-alone", "support-max-log-load", "support-high-pairs", "support-high-alone",
	"support-high-full", "support-price", "scenario", "train-loads", "eval-loads"}

// tieredSupport are the support sizes of a tiered teacher's student.
type tieredSupport struct {
	pairs, alone, highPairs, highAlone int
	maxLoad                            float64
	highFull, price                    bool
	scenario                           string
	trainLoads, evalLoads              []float64
}

// tieredTeacher tells whether path is a tiered policy file.
func tieredTeacher(path string) bool {
	if !env.IsPolicyFile(path) {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && env.PolicyFileKind(b) == env.TieredPolicyKind
}

// runDistillTiered distils a tiered policy file (distill.RunTiered) on
// Gavel's single-GPU protocol.
func runDistillTiered(cmd *cobra.Command, a *app, teacher, out, seeds string, tp *tieredSupport, asJSON bool) error {
	if out == "" {
		return fmt.Errorf("--out is required")
	}
	cfg := distill.TieredConfig{Teacher: teacher, Out: out, Pairs: tp.pairs, Alone: tp.alone, MaxLogLoad: tp.maxLoad,
		HighPairs: tp.highPairs, HighAlone: tp.highAlone, HighFull: tp.highFull, Price: tp.price, TrainRates: distill.DefaultTieredTrainRates,
		TrainSeeds: distill.DefaultTieredTrainSeeds, EvalRates: distill.DefaultTieredEvalRates}
	cfg.Scenario = tp.scenario
	switch {
	case len(tp.trainLoads) > 0:
		cfg.Loads, cfg.TrainRates, cfg.EvalRates = true, tp.trainLoads, tp.trainLoads
		if len(tp.evalLoads) > 0 {
			cfg.EvalRates = tp.evalLoads
		}
	case len(tp.evalLoads) > 0:
		return fmt.Errorf("--eval-loads needs --train-loads")
	case tp.scenario != "" && tp.scenario != "gavel-single":
		return fmt.Errorf("--scenario %s needs --train-loads (the default rates are the single-GPU protocol's)", tp.scenario)
	}
	if seeds != "" {
		var err error
		if cfg.EvalSeeds, err = report.ParseSeeds(seeds); err != nil {
			return fmt.Errorf("--eval-seeds: %w", err)
		}
	}
	a.log.Info("distill tiered", "teacher", teacher, "out", out, "pairs", tp.pairs, "alone", tp.alone, "max_log_load", tp.maxLoad,
		"high_pairs", tp.highPairs, "high_alone", tp.highAlone, "high_full", tp.highFull, "price", tp.price, "scenario", tp.scenario, "train_loads", tp.trainLoads, "eval_seeds", seeds)
	sum, err := distill.RunTiered(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.stdout, sum)
	}
	return distill.WriteTieredSummary(a.stdout, sum)
}
