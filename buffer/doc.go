// Package buffer holds experience buffers for off-policy learners.
//
//   - [Ring]: a bounded FIFO of items with batch eviction. When a full ring
//     receives an item, the oldest EvictRatio·MaxSize items (at least one)
//     leave at once, so that a learner keeps only recent data and eviction
//     is not paid one item at a time. Sampling is uniform with replacement.
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
// tegrl's PPO learner is on-policy and learns from each batch once
// (rl.Learner), so neither buffer is on its training path; they are the
// tested building blocks for replay-based learners (DQN- or SAC-style
// off-policy methods, or replaying recorded decisions).
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
package buffer
