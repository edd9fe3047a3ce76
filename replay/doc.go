// Package replay re-runs recorded runs for evaluating schedulers.
//
// Trace replay ([Open], [Run], [Diff]; `tegrl replay`): a run recorded by
// datasets.RecordRun carries its cluster, workload and configuration
// (seed, so its machine failures, tick, duration, limits, TEG
// configuration, scheduler). Run re-runs it deterministically under any
// env.Scheduler through a wrapper that logs each decision (time, job,
// action); under the recorded scheduler it streams the recorded decisions
// from transitions.arrow and checks every one, and the final metrics'
// JSON byte for byte, reporting the first divergence. Diff runs two
// schedulers, aligns their decisions by (job, occurrence) and lists the
// differences and every metric's A, B and B - A.
package replay
