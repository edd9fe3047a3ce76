package env

// pyRandom is the Mersenne Twister MT19937 with CPython's random module's
// seeding and derived draws (random, getrandbits, randbelow, shuffle,
// sample). The round simulator draws Gavel's job streams, type shuffles
// and policy choices from it with Gavel's seed offsets, so that a run with
// seed s sees the same jobs as Gavel's simulator with seed s (Matsumoto and
// Nishimura, "Mersenne Twister: A 623-Dimensionally Equidistributed
// Uniform Pseudo-Random Number Generator", ACM TOMACS 1998).
type pyRandom struct {
	mt  [624]uint32
	idx int
}

func newPyRandom(seed uint64) *pyRandom {
	r := &pyRandom{}
	r.seed(seed)
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = 624
}

// seed is CPython's random.seed(n) for a non-negative integer n.
func (r *pyRandom) seed(n uint64) {
	key := []uint32{uint32(n)}
	if n>>32 != 0 {
		key = append(key, uint32(n>>32))
	}
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(624, len(key)); k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
	r.idx = 624
}

func (r *pyRandom) uint32() uint32 {
	if r.idx >= 624 {
		for k := range 624 {
			y := (r.mt[k] & 0x80000000) | (r.mt[(k+1)%624] & 0x7fffffff)
			v := r.mt[(k+397)%624] ^ (y >> 1)
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// random is random.random(): 53 random bits in [0, 1).
func (r *pyRandom) random() float64 {
	a, b := r.uint32()>>5, r.uint32()>>6
	return (float64(a)*67108864 + float64(b)) * (1.0 / 9007199254740992.0)
}

// uniform is random.uniform(a, b).
func (r *pyRandom) uniform(a, b float64) float64 { return a + (b-a)*r.random() }

// randbelow is random._randbelow(n) for 0 < n < 2^32: rejection sampling
// on n's bit length.
func (r *pyRandom) randbelow(n int) int {
	k := 0
	for v := n; v > 0; v >>= 1 {
		k++
	}
	for {
		v := int(r.uint32() >> (32 - k))
		if v < n {
			return v
		}
	}
}

// shuffle is random.shuffle.
func (r *pyRandom) shuffle(x []int) {
	for i := len(x) - 1; i > 0; i-- {
		j := r.randbelow(i + 1)
		x[i], x[j] = x[j], x[i]
	}
}

// sample2 is random.sample(population, 2) for a population of n: the
// indices of the two draws.
func (r *pyRandom) sample2(n int) (int, int) {
	if n <= 37 { // CPython's pool method for k = 2
		a := r.randbelow(n)
		b := r.randbelow(n - 1)
		// pool[a] was replaced by pool[n-1]
		if b == a {
			b = n - 1
		}
		return a, b
	}
	a := r.randbelow(n)
	b := r.randbelow(n)
	for b == a {
		b = r.randbelow(n)
	}
	return a, b
}
