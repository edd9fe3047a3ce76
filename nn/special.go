package nn

import "math"

// Lgamma returns log|Γ(x)|.
func Lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// Digamma returns ψ(x) = d/dx log Γ(x), the derivative of [Lgamma].
func Digamma(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, -1) {
		return math.NaN()
	}
	if x <= 0 {
		if x == math.Floor(x) {
			return math.NaN() // poles at 0, -1, -2, ...
		}
		// Reflection: ψ(x) = ψ(1-x) - π/tan(πx).
		return Digamma(1-x) - math.Pi/math.Tan(math.Pi*x)
	}
	var r float64
	for x < 10 { // ψ(x) = ψ(x+1) - 1/x moves x to where the series is accurate
		r -= 1 / x
		x++
	}
	x2 := 1 / (x * x)
	// Asymptotic series with Bernoulli numbers; truncation error < 1e-16 for x ≥ 10.
	s := x2 * (1.0/12 - x2*(1.0/120-x2*(1.0/252-x2*(1.0/240-x2*(1.0/132-x2*(691.0/32760-x2/12))))))
	return r + math.Log(x) - 0.5/x - s
}

// Trigamma returns ψ'(x), the derivative of [Digamma].
func Trigamma(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, -1) {
		return math.NaN()
	}
	if x <= 0 {
		if x == math.Floor(x) {
			return math.NaN()
		}
		// Reflection: ψ'(1-x) + ψ'(x) = π²/sin²(πx).
		s := math.Sin(math.Pi * x)
		return -Trigamma(1-x) + math.Pi*math.Pi/(s*s)
	}
	var r float64
	for x < 10 {
		r += 1 / (x * x)
		x++
	}
	x2 := 1 / (x * x)
	s := 1/x + x2/2 + x2/x*(1.0/6-x2*(1.0/30-x2*(1.0/42-x2*(1.0/30-x2*(5.0/66-x2*(691.0/2730-x2*7.0/6))))))
	return r + s
}
