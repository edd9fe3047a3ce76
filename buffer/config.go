package buffer

import (
	"errors"
	"fmt"
	"math"
)

// Defaults of the buffers, in one place.
const (
	// DefaultRingMaxSize is the capacity of a Ring.
	DefaultRingMaxSize = 10_000
	// DefaultRingEvictRatio is the share of a full Ring evicted at once.
	DefaultRingEvictRatio = 0.2

	// DefaultPrioritizedCapacity is the capacity of a Prioritized buffer.
	DefaultPrioritizedCapacity = 10_000
	// DefaultAlpha is the priority exponent α of Schaul et al. (proportional
	// variant, Atari).
	DefaultAlpha = 0.6
	// DefaultBeta0 is the importance-sampling exponent β at step 0 (Schaul
	// et al. anneal it from 0.4 to 1).
	DefaultBeta0 = 0.4
	// DefaultBetaSteps is the number of Sample calls over which β reaches 1.
	DefaultBetaSteps = 100_000
	// DefaultEpsilon is added to every priority so that an item whose TD
	// error is zero can still be drawn.
	DefaultEpsilon = 1e-6
	// DefaultInitialMaxPriority is the priority of the first items, before
	// any update has raised the maximum.
	DefaultInitialMaxPriority = 1.0

	// maxCapacity bounds buffer sizes so that slot arithmetic and the sum
	// tree (2·2^k float64 per tree) stay far from overflow.
	maxCapacity = 1 << 30
)

// ErrInvalidConfig is wrapped by every configuration error.
var ErrInvalidConfig = errors.New("buffer: invalid config")

// RingConfig configures a Ring.
type RingConfig struct {
	// MaxSize is the most items the ring holds (> 0).
	MaxSize int
	// EvictRatio is the share of MaxSize evicted, oldest first, when an item
	// arrives at a full ring: ceil(EvictRatio·MaxSize) items, at least one.
	// In (0, 1].
	EvictRatio float64
}

// DefaultRingConfig returns a RingConfig of 10,000 items evicting 20% at once.
func DefaultRingConfig() RingConfig {
	return RingConfig{MaxSize: DefaultRingMaxSize, EvictRatio: DefaultRingEvictRatio}
}

// Validate reports the first invalid field, wrapping ErrInvalidConfig.
func (c RingConfig) Validate() error {
	if c.MaxSize <= 0 || c.MaxSize > maxCapacity {
		return fmt.Errorf("%w: RingConfig.MaxSize = %d: must be in [1, %d]", ErrInvalidConfig, c.MaxSize, maxCapacity)
	}
	if !(c.EvictRatio > 0 && c.EvictRatio <= 1) { // also refuses NaN
		return fmt.Errorf("%w: RingConfig.EvictRatio = %v: must be in (0, 1]", ErrInvalidConfig, c.EvictRatio)
	}
	return nil
}

// evictCount is the number of items a full ring drops at once:
// ceil(ratio·size), at least 1. The small tolerance keeps ratios such as
// 0.3·10 (3.0000000000000004 in float64) at the count a reader expects.
func (c RingConfig) evictCount() int {
	k := int(math.Ceil(c.EvictRatio*float64(c.MaxSize) - 1e-9))
	return min(max(k, 1), c.MaxSize)
}

// PrioritizedConfig configures a Prioritized buffer.
type PrioritizedConfig struct {
	// Capacity is the most items held; a full buffer overwrites its oldest
	// item (> 0).
	Capacity int
	// Alpha is the priority exponent α: P(i) ∝ (p_i + Epsilon)^α. 0 gives
	// uniform sampling. Finite, >= 0.
	Alpha float64
	// Beta0 is the importance-sampling exponent β at step 0, in [0, 1].
	Beta0 float64
	// BetaSteps is the number of Sample calls over which β grows linearly
	// from Beta0 to 1 (> 0). Set Beta0 = 1 for a constant β of 1.
	BetaSteps int
	// Epsilon is added to every priority given to UpdatePriorities. Finite,
	// >= 0.
	Epsilon float64
	// InitialMaxPriority is the priority of items added before any update
	// raised the maximum. Finite, > 0.
	InitialMaxPriority float64
}

// DefaultPrioritizedConfig returns the settings of Schaul et al.'s
// proportional variant: α 0.6, β from 0.4 to 1, capacity 10,000.
func DefaultPrioritizedConfig() PrioritizedConfig {
	return PrioritizedConfig{
		Capacity:           DefaultPrioritizedCapacity,
		Alpha:              DefaultAlpha,
		Beta0:              DefaultBeta0,
		BetaSteps:          DefaultBetaSteps,
		Epsilon:            DefaultEpsilon,
		InitialMaxPriority: DefaultInitialMaxPriority,
	}
}

// Validate reports the first invalid field, wrapping ErrInvalidConfig.
func (c PrioritizedConfig) Validate() error {
	switch {
	case c.Capacity <= 0 || c.Capacity > maxCapacity:
		return fmt.Errorf("%w: PrioritizedConfig.Capacity = %d: must be in [1, %d]", ErrInvalidConfig, c.Capacity, maxCapacity)
	case !(c.Alpha >= 0) || math.IsInf(c.Alpha, 1):
		return fmt.Errorf("%w: PrioritizedConfig.Alpha = %v: must be finite and >= 0", ErrInvalidConfig, c.Alpha)
	case !(c.Beta0 >= 0 && c.Beta0 <= 1):
		return fmt.Errorf("%w: PrioritizedConfig.Beta0 = %v: must be in [0, 1]", ErrInvalidConfig, c.Beta0)
	case c.BetaSteps <= 0:
		return fmt.Errorf("%w: PrioritizedConfig.BetaSteps = %d: must be positive", ErrInvalidConfig, c.BetaSteps)
	case !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 1):
		return fmt.Errorf("%w: PrioritizedConfig.Epsilon = %v: must be finite and >= 0", ErrInvalidConfig, c.Epsilon)
	case !(c.InitialMaxPriority > 0) || math.IsInf(c.InitialMaxPriority, 1):
		return fmt.Errorf("%w: PrioritizedConfig.InitialMaxPriority = %v: must be finite and > 0", ErrInvalidConfig, c.InitialMaxPriority)
	}
	// The mass of the initial priority must leave room for a sum over the
	// whole tree.
	if lim := c.maxRawPriority(); !(c.InitialMaxPriority+c.Epsilon <= lim) {
		return fmt.Errorf("%w: PrioritizedConfig.InitialMaxPriority = %v: above %g, where the tree's sums over %d items could overflow",
			ErrInvalidConfig, c.InitialMaxPriority, lim-c.Epsilon, c.Capacity)
	}
	return nil
}

// AnnealedBeta is β after step Sample calls: Beta0 + (1-Beta0)·min(1,
// step/BetaSteps). Steps below 0 count as 0.
func (c PrioritizedConfig) AnnealedBeta(step int) float64 {
	if step <= 0 {
		return c.Beta0
	}
	if step >= c.BetaSteps {
		return 1
	}
	return c.Beta0 + (1-c.Beta0)*float64(step)/float64(c.BetaSteps)
}
