// Package env is tegrl's cluster simulator: machines, their GPUs, racks
// and network; jobs that arrive, wait, run and finish; and the placement
// policies compared on them. It is a deterministic state machine with no
// I/O beyond reading trace files: flags, output and networks live in the
// packages above it.
//
// # The model
//
// A [Cluster] is a list of machines (CPU, memory, whole or shared GPUs,
// rack, power) built synthetically ([NewSyntheticCluster]) or from a trace
// ([ClusterSpec.Load]). A [Workload] is a list of jobs with their
// requests, durations and arrival times ([NewSyntheticWorkload], or a
// trace through [WorkloadSpec.Load]). [NewSim] runs a workload on a
// cluster in ticks of [SimConfig].Tick seconds: each [Sim.Step] advances
// running jobs (CPU and GPU contention slow them down), completes them,
// fails and repairs machines, and offers the head of the queue to the
// scheduler until it waits. [Sim.Run] steps to the end and returns the
// [Metrics] (job completion time, slowdown, waits, utilisation,
// fragmentation, energy, safety violations, reward).
//
// The Thermo-Economic Governor ([TEGConfig]; docs/teg.md) adds a
// potential field over machines, Langevin moves of running jobs, a safety
// layer (a control barrier on memory and rack power), a damping controller
// and fair-share tokens. The saturation experiment of the FGD paper
// ([Saturate]; docs/saturation.md) fills a GPU cluster with pods that
// never finish. [Live] is the same model driven by the events of a real
// cluster, for serving decisions.
//
// # The Scheduler interface
//
// Every placement policy implements [Scheduler]: given an [Observation]
// (the state, the pending job, the governor's view) and a random stream,
// Decide returns an [Action] (a machine and GPU, or [Wait]). The classic
// baselines ([NewScheduler], [SchedulerNames]), the pure Langevin
// governor, learned policies (package rl) and distilled students (package
// distill) all run through it, so every tool compares them alike.
//
// # Determinism
//
// A run is a function of its inputs and its seed: the cluster, the
// workload, the machine failures and each scheduler's stream are drawn
// from PCG streams (math/rand/v2) seeded from [SimConfig] and the caller,
// and no result depends on map order or wall time. The same inputs give
// the same [Metrics], byte for byte in JSON, which the tests and
// `tegrl replay` check.
package env
