// Package replay holds the experience buffers of tegrl's learners and the
// replay of recorded runs for evaluating schedulers.
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
//
// Two buffers:
//
//   - [Ring]: a bounded FIFO of items with batch eviction. When a full ring
//     receives an item, the oldest EvictRatio·MaxSize items (at least one)
//     leave at once, so that an on-policy learner keeps only recent data and
//     eviction is not paid one item at a time. Sampling is uniform with
//     replacement.
//   - [Prioritized]: proportional prioritized experience replay (Schaul et
//     al., "Prioritized Experience Replay", ICLR 2016). Item i is drawn with
//     probability P(i) = p_i^α / Σ_k p_k^α through a sum tree (O(log n)
//     sample and update), by stratified sampling (a batch of n splits the
//     total mass into n equal segments and draws one item from each), and
//     carries the importance weight w_i = (N·P(i))^-β / max_j w_j, with β
//     annealed linearly to 1. New items get the largest priority seen so
//     far, so that every item is replayed at least once with high
//     probability. A full buffer overwrites its oldest item.
//
// Both are safe for many concurrent writers (actors calling Add) and a
// learner that samples and updates: one mutex each, held only for the
// O(batch·log n) work that must see a consistent buffer.
//
// Randomness comes only from the caller's *rand.Rand (math/rand/v2): the same
// seed and the same sequence of calls give the same samples, byte for byte.
//
// Configuration lives in [RingConfig] and [PrioritizedConfig]; their
// defaults are in [DefaultRingConfig] and [DefaultPrioritizedConfig], and
// constructors refuse invalid values with an error that names the field.
package replay
