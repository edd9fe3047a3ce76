package rl

import (
	"math"
	"math/rand/v2"
)

// CartPole is the classic cart-pole balancing task with the dynamics and
// limits of Gymnasium's CartPole-v1: Euler integration at 50 Hz, a pole
// that falls past 12° or a cart that leaves ±2.4 ends the episode, reward
// 1 per step (the last one included), and episodes are truncated at 500
// steps. Actions: 0 pushes left, 1 pushes right.
type CartPole struct {
	x, xDot, theta, thetaDot float64
	steps                    int
	rng                      *rand.Rand
	obs                      [4]float32
}

// CartPole-v1 constants (Barto, Sutton & Anderson 1983, as in Gymnasium).
const (
	cpGravity    = 9.8
	cpMassCart   = 1.0
	cpMassPole   = 0.1
	cpTotalMass  = cpMassCart + cpMassPole
	cpLength     = 0.5 // half the pole's length
	cpPoleML     = cpMassPole * cpLength
	cpForce      = 10.0
	cpTau        = 0.02
	cpThetaLimit = 12 * 2 * math.Pi / 360
	cpXLimit     = 2.4
	// CartPoleMaxSteps is CartPole-v1's time limit.
	CartPoleMaxSteps = 500
)

// Reset implements Env: the state starts uniform in ±0.05.
func (c *CartPole) Reset(seed uint64) ([]float32, error) {
	c.rng = rand.New(rand.NewPCG(seed, 0x63617274706f6c65)) // "cartpole"
	c.x = c.rng.Float64()*0.1 - 0.05
	c.xDot = c.rng.Float64()*0.1 - 0.05
	c.theta = c.rng.Float64()*0.1 - 0.05
	c.thetaDot = c.rng.Float64()*0.1 - 0.05
	c.steps = 0
	return c.observe(), nil
}

// Step implements Env.
func (c *CartPole) Step(a int) ([]float32, float64, bool) {
	force := -cpForce
	if a == 1 {
		force = cpForce
	}
	cos, sin := math.Cos(c.theta), math.Sin(c.theta)
	temp := (force + cpPoleML*c.thetaDot*c.thetaDot*sin) / cpTotalMass
	thetaAcc := (cpGravity*sin - cos*temp) / (cpLength * (4.0/3.0 - cpMassPole*cos*cos/cpTotalMass))
	xAcc := temp - cpPoleML*thetaAcc*cos/cpTotalMass
	c.x += cpTau * c.xDot
	c.xDot += cpTau * xAcc
	c.theta += cpTau * c.thetaDot
	c.thetaDot += cpTau * thetaAcc
	c.steps++
	done := c.x < -cpXLimit || c.x > cpXLimit || c.theta < -cpThetaLimit || c.theta > cpThetaLimit ||
		c.steps >= CartPoleMaxSteps
	return c.observe(), 1, done
}

func (c *CartPole) observe() []float32 {
	c.obs = [4]float32{float32(c.x), float32(c.xDot), float32(c.theta), float32(c.thetaDot)}
	return c.obs[:]
}
