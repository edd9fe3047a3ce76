package env

import "testing"

// TestPyRandomMatchesCPython checks the generator against values printed
// by CPython 3.11's random module.
func TestPyRandomMatchesCPython(t *testing.T) {
	r := newPyRandom(2)
	want := []float64{0.9560342718892494, 0.9478274870593494, 0.05655136772680869}
	for i, w := range want {
		if g := r.random(); g != w {
			t.Fatalf("Random(2) draw %d = %v, CPython %v", i, g, w)
		}
	}
	if g := int(r.uint32() >> 27); g != 2 {
		t.Fatalf("getrandbits(5) = %d, CPython 2", g)
	}
	r = newPyRandom(5)
	x := []int{0, 1, 2}
	r.shuffle(x)
	if x[0] != 0 || x[1] != 1 || x[2] != 2 {
		t.Fatalf("Random(5).shuffle = %v, CPython [0 1 2]", x)
	}
	r = newPyRandom(0)
	if a, b := r.sample2(10); a != 6 || b != 9 {
		t.Fatalf("Random(0).sample(range(10), 2) = %d %d, CPython 6 9", a, b)
	}
	if a, b := r.sample2(100); a != 5 || b != 33 {
		t.Fatalf("then sample(range(100), 2) = %d %d, CPython 5 33", a, b)
	}
}
