package distill

import (
	"context"
	"fmt"
	"io"

	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

// Command is tegrl distill as its command line gives it: the run, its
// held-out seeds as a list, and the form of the summary printed.
type Command struct {
	RunConfig
	Seeds string // a list for report.ParseSeeds ("": no evaluation)
	JSON  bool   `flag:"json" usage:"print the summary as JSON"`
}

// Run checks c, distils (Run) and prints the summary to w (WriteSummary,
// or summary.json with JSON).
func (c Command) Run(ctx context.Context, w io.Writer) error {
	if c.Teacher == "" || c.Out == "" {
		return fmt.Errorf("--teacher and --out are required")
	}
	if c.Seeds != "" {
		var err error
		if c.EvalSeeds, err = report.ParseSeeds(c.Seeds); err != nil {
			return err
		}
	}
	sum, err := Run(ctx, c.RunConfig)
	if err != nil {
		return err
	}
	if c.JSON {
		return rl.WriteSummaryJSON(w, sum)
	}
	return WriteSummary(w, sum)
}
