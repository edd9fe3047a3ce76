package env

import "fmt"

// DescribeTraceLoad is the line the commands print about a trace workload
// on c: its jobs, active span and offered load, with the target when one
// (target > 0, --load) was set.
func DescribeTraceLoad(w *Workload, c *Cluster, target float64) string {
	l := OfferedLoad(w, c)
	t := ""
	if target > 0 {
		t = fmt.Sprintf(" (--load %g)", target)
	}
	return fmt.Sprintf("workload: %d jobs over %.0f s, offered load %.3f%s (CPU %.3f, GPU %.3f)",
		len(w.Jobs), l.SpanS, l.Offered(), t, l.CPU, l.GPU)
}
