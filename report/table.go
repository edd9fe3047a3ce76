package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// TableStepPct is the arrival step of the per-scheduler text table; the
// headline bin is always included.
const TableStepPct = 10

// SortByAlloc returns the summaries ordered by GPU allocation at 130%
// arrival, highest first; ties keep their input order.
func SortByAlloc(sums []SaturationSummary) []SaturationSummary {
	out := slices.Clone(sums)
	slices.SortStableFunc(out, func(a, b SaturationSummary) int {
		return cmp.Compare(b.AllocAt130Mean, a.AllocAt130Mean)
	})
	return out
}

// pm formats mean ± std with two decimals.
func pm(mean, std float64) string {
	return fmt.Sprintf("%.2f ± %.2f", mean, std)
}

// WriteSaturationText writes, for each summary, its allocation curve every
// TableStepPct percent of arrival plus the headline bin, then its headline
// line; then a summary table of all schedulers sorted by allocation at 130%.
func WriteSaturationText(w io.Writer, sums []SaturationSummary) error {
	var b strings.Builder
	for _, s := range sums {
		fmt.Fprintf(&b, "== %s  (seeds %s, n=%d; mean ± sample std)\n", s.Scheduler, FormatSeeds(s.Seeds), len(s.Seeds))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "arrived %\tGPU alloc %\tfrag % of cap\tfrag ratio %\t")
		for _, bin := range s.Bins {
			if bin.ArrivalPct%TableStepPct != 0 && bin.ArrivalPct != HeadlineBin {
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.2f\t\n", bin.ArrivalPct, pm(bin.AllocMean, bin.AllocStd), bin.FragPctMean, bin.FragRatioPctMean)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s at %d%% arrival: GPU alloc %s %%, frag %s %% of capacity, frag ratio %s %%, dropped %.1f of %.1f pods\n\n",
			s.Scheduler, HeadlineBin, pm(s.AllocAt130Mean, s.AllocAt130Std), pm(s.FragAt130Mean, s.FragAt130Std),
			pm(s.FragRatioAt130Mean, s.FragRatioAt130Std), s.DroppedMean, s.PodsMean)
	}
	fmt.Fprintf(&b, "== summary at %d%% arrival, sorted by GPU allocation\n", HeadlineBin)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tscheduler\tGPU alloc %\tfrag % of cap\tfrag ratio %\tdropped pods\tseeds\t")
	for i, s := range SortByAlloc(sums) {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.1f\t%d\t\n", i+1, s.Scheduler, pm(s.AllocAt130Mean, s.AllocAt130Std),
			pm(s.FragAt130Mean, s.FragAt130Std), pm(s.FragRatioAt130Mean, s.FragRatioAt130Std), s.DroppedMean, len(s.Seeds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSaturationMarkdown writes the summary table (sorted by allocation at
// 130% arrival) as GitHub Markdown, then, when plotRef is not empty, an
// image link to the plot at plotRef (a path relative to the Markdown file),
// then the command line that produced it in a code block.
func WriteSaturationMarkdown(w io.Writer, sums []SaturationSummary, commandLine, plotRef string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# GPU saturation (FGD protocol)\n\n")
	if len(sums) > 0 {
		fmt.Fprintf(&b, "Seeds %s (n=%d). Values at %d%% arrived GPU demand; mean ± sample standard deviation (n-1) over seeds.\n",
			FormatSeeds(sums[0].Seeds), len(sums[0].Seeds), HeadlineBin)
		fmt.Fprintf(&b, "Fragmentation is F(M) as %% of GPU capacity; the ratio is F(M) as %% of idle GPU.\n\n")
	}
	b.WriteString("| rank | scheduler | GPU alloc % | frag % of capacity | frag ratio % | dropped pods |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|\n")
	for i, s := range SortByAlloc(sums) {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.1f |\n", i+1, s.Scheduler, pm(s.AllocAt130Mean, s.AllocAt130Std),
			pm(s.FragAt130Mean, s.FragAt130Std), pm(s.FragRatioAt130Mean, s.FragRatioAt130Std), s.DroppedMean)
	}
	if plotRef != "" {
		fmt.Fprintf(&b, "\n![GPU allocation ratio against arrived GPU demand](%s)\n", plotRef)
	}
	fmt.Fprintf(&b, "\nCommand:\n\n```sh\n%s\n```\n", commandLine)
	_, err := io.WriteString(w, b.String())
	return err
}
