package rl

import "github.com/tegrl/tegrl/env"

// Env is an episodic environment with observations O and actions A. Reset
// starts an episode from a seed and returns its first observation; Step
// applies an action and returns the next observation, the reward earned and
// whether the episode ended (terminated or truncated). After done the
// caller must Reset. Reset fails when the episode cannot be built (a
// workload or cluster source that does not load). Implementations are
// deterministic given the seed and the actions.
type Env[O, A any] interface {
	Reset(seed uint64) (O, error)
	Step(a A) (next O, reward float64, done bool)
}

var (
	_ Env[Decision, env.Action] = (*ClusterEnv)(nil)
	_ Env[[]float32, int]       = (*CartPole)(nil)
)
