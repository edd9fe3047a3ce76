// Package rl learns scheduling policies: the PPO learner, V-trace, the
// IMPALA-style actors that feed it over NATS (package rl/transport), the
// policy network with the hybrid placement/replica/affinity/damping action,
// checkpoints, and the learned env.Scheduler.
//
// The algorithm reads top to bottom in ppo.go (CleanRL style): the
// hyper-parameters are named and defaulted in one place ([Config]), and
// each update logs the standard diagnostics (approximate KL, clip fraction,
// explained variance, entropy).
//
// Environments implement [Env]. [CartPole] is the standard control task,
// used to validate the learner against CleanRL's published results; the
// TEG cluster simulation is wrapped as an [Env] by [ClusterEnv].
package rl
