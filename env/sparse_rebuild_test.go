package env

import "testing"

// TestObserveSparseAfterClusterShrinks: one Tensors refreshed sparsely on
// a 1000-machine cluster and then on a 300-machine one (a service that
// redefines its cluster keeps its policy's buffers) must forget the mask
// entries it set on the old cluster: they index past the new cluster's
// mask and would panic, or flag machines the new cluster's job never
// admitted.
func TestObserveSparseAfterClusterShrinks(t *testing.T) {
	live := func(n int) *Sim {
		c, err := NewSyntheticCluster(n, 1)
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLive(c, nil, SimConfig{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return l.Sim()
	}
	job := Job{Name: "p", Kind: Batch, QoS: Burstable, CPU: 1000, Mem: 1024, Duration: 60, Service: -1}
	var tn Tensors
	big := live(1000)
	big.ObserveSparse(&tn, &job, []int{767, 900}, 2)
	if !tn.Mask[767] || !tn.Mask[900] {
		t.Fatalf("idle machines 767 and 900 do not admit a 1-CPU job: mask %v %v", tn.Mask[767], tn.Mask[900])
	}
	small := live(300)
	small.ObserveSparse(&tn, &job, []int{5}, 1)
	if len(tn.Mask) != 300 {
		t.Fatalf("mask of %d entries on 300 machines", len(tn.Mask))
	}
	for i, m := range tn.Mask {
		if m != (i == 5) {
			t.Fatalf("mask[%d] = %v after a sparse refresh on candidate 5 only", i, m)
		}
	}
	// Back to a large cluster whose buffers still hold the old capacity:
	// the entries the large cluster's first refresh set are gone too.
	big2 := live(1000)
	big2.ObserveSparse(&tn, &job, []int{10}, 1)
	for i, m := range tn.Mask {
		if m != (i == 10) {
			t.Fatalf("mask[%d] = %v after a sparse refresh on candidate 10 only", i, m)
		}
	}
}
