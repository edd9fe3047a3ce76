package distill

import (
	"fmt"
	"io"
)

// WriteSummary prints sum as tegrl distill does: the student's size,
// agreement and latency against the teacher's, the held-out comparison
// and the teacher/student slowdown ratio.
func WriteSummary(w io.Writer, sum *Summary) error {
	last := sum.Log[len(sum.Log)-1]
	fmt.Fprintf(w, "student (%d parameters, teacher %d) on %d decisions: top-1 agreement %.3f; network latency %.1f µs (teacher %.1f µs)\n",
		sum.Params["student"], sum.Params["teacher"], sum.Decisions, last.Agreement, sum.LatencyUS["student"], sum.LatencyUS["teacher"])
	if sum.DecisionUS != nil {
		fmt.Fprintf(w, "  whole decision on %d machines: student %.1f µs, teacher %.1f µs (%.1fx faster)\n",
			sum.DecisionMachines, sum.DecisionUS["student"], sum.DecisionUS["teacher"], sum.DecisionUS["teacher"]/sum.DecisionUS["student"])
	}
	for _, r := range sum.Eval {
		fmt.Fprintf(w, "  %-8s slowdown %.3f  SLA viol %.2f%%  safety viol %d\n", r.Scheduler, r.MeanSlowdown, 100*r.SLAViolationRate, r.SafetyViolations)
	}
	if sum.ReturnRatio > 0 {
		fmt.Fprintf(w, "  teacher/student slowdown ratio %.3f (1: as good; below 1: the student is worse)\n", sum.ReturnRatio)
	}
	return nil
}
