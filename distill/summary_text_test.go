package distill

import (
	"bytes"
	"testing"

	"github.com/tegrl/tegrl/report"
)

func TestWriteSummary(t *testing.T) {
	sum := &Summary{Decisions: 500, Log: []Stats{{Agreement: 0.1}, {Agreement: 0.875}},
		Params:     map[string]int{"student": 1000, "teacher": 9000},
		LatencyUS:  map[string]float64{"student": 2.25, "teacher": 10},
		DecisionUS: map[string]float64{"student": 40, "teacher": 100}, DecisionMachines: 64,
		Eval:        []report.EvalRow{{Scheduler: "student", MeanSlowdown: 1.5, SLAViolationRate: 0.0125, SafetyViolations: 2}},
		ReturnRatio: 0.95}
	var b bytes.Buffer
	if err := WriteSummary(&b, sum); err != nil {
		t.Fatal(err)
	}
	want := "student (1000 parameters, teacher 9000) on 500 decisions: top-1 agreement 0.875; network latency 2.2 µs (teacher 10.0 µs)\n" +
		"  whole decision on 64 machines: student 40.0 µs, teacher 100.0 µs (2.5x faster)\n" +
		"  student  slowdown 1.500  SLA viol 1.25%  safety viol 2\n" +
		"  teacher/student slowdown ratio 0.950 (1: as good; below 1: the student is worse)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
