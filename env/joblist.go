package env

import (
	"fmt"
	"math"
)

// JobList is a JobSource over recorded jobs: it yields them in order and
// then a job that never arrives (Arrival +Inf), so a run on a finite trace
// ends when its last job is done. Replaying the jobs a generator yielded
// reproduces the generator's run exactly while the run draws no more jobs
// than were recorded.
type JobList struct {
	jobs []DLJob
	next int
}

// NewJobList checks jobs against table t (known job types, gangs of at
// least one GPU, positive work, arrival times that do not decrease) and
// returns a source over them.
func NewJobList(t *ThroughputTable, jobs []DLJob) (*JobList, error) {
	prev := 0.0
	for i, j := range jobs {
		switch {
		case j.Model < 0 || j.Model >= len(t.Models):
			return nil, fmt.Errorf("job %d: job type %d outside the table's %d types", i, j.Model, len(t.Models))
		case j.Scale < 1:
			return nil, fmt.Errorf("job %d: gang of %d GPUs", i, j.Scale)
		case !(j.Steps > 0) || math.IsInf(j.Steps, 0):
			return nil, fmt.Errorf("job %d: steps %v must be positive and finite", i, j.Steps)
		case math.IsNaN(j.Arrival) || math.IsInf(j.Arrival, 0) || j.Arrival < prev:
			return nil, fmt.Errorf("job %d: arrival %v s before the previous job's %v s or not finite", i, j.Arrival, prev)
		case !(j.Priority >= 0) || math.IsInf(j.Priority, 0):
			return nil, fmt.Errorf("job %d: priority %v must be finite and not negative", i, j.Priority)
		}
		prev = j.Arrival
	}
	return &JobList{jobs: jobs}, nil
}

// Next implements JobSource.
func (l *JobList) Next() DLJob {
	if l.next >= len(l.jobs) {
		return DLJob{ID: len(l.jobs), Arrival: math.Inf(1)}
	}
	l.next++
	return l.jobs[l.next-1]
}

// CheckCluster reports the first recorded gang cluster c can never place.
func (l *JobList) CheckCluster(c *GPUCluster) error {
	for _, j := range l.jobs {
		if err := c.CheckGang(j); err != nil {
			return fmt.Errorf("workload: %w", err)
		}
	}
	return nil
}
