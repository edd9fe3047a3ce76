package env

import (
	"math"
	"testing"
)

func TestJobList(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	ok := []DLJob{{Model: 0, Scale: 1, Arrival: 0, Steps: 10, Priority: 1}, {Model: 1, Scale: 2, Arrival: 5, Steps: 3, Priority: 1}}
	l, err := NewJobList(tab, ok)
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c := l.Next(), l.Next(), l.Next(); a != ok[0] || b != ok[1] || !math.IsInf(c.Arrival, 1) {
		t.Fatalf("Next: %+v %+v %+v", a, b, c)
	}
	for name, j := range map[string]DLJob{
		"type":     {Model: len(tab.Models), Scale: 1, Steps: 1},
		"gang":     {Model: 0, Scale: 0, Steps: 1},
		"steps":    {Model: 0, Scale: 1, Steps: 0},
		"inf":      {Model: 0, Scale: 1, Steps: math.Inf(1)},
		"arrival":  {Model: 0, Scale: 1, Steps: 1, Arrival: -1},
		"nan":      {Model: 0, Scale: 1, Steps: 1, Arrival: math.NaN()},
		"priority": {Model: 0, Scale: 1, Steps: 1, Priority: -1},
	} {
		if _, err := NewJobList(tab, []DLJob{j}); err == nil {
			t.Errorf("%s: no error for %+v", name, j)
		}
	}
	c, err := ParseGPUClusterSpec("4:0:0", tab, 1)
	if err != nil {
		t.Fatal(err)
	}
	big, _ := NewJobList(tab, []DLJob{{Model: 0, Scale: 8, Steps: 1}})
	if err := big.CheckCluster(c); err == nil {
		t.Fatal("an 8-GPU gang on 4 GPUs: no error")
	}
}

func TestTiresiasSetParam(t *testing.T) {
	p, err := NewAllocationPolicy("tiresias", []PolicyParam{{"queue1-h", 2}, {"queue2-h", 20}})
	if err != nil {
		t.Fatal(err)
	}
	tr := p.(*Tiresias)
	if tr.Thresholds[0] != 7200 || tr.Thresholds[1] != 72000 || tr.queueOf(7199) != 0 || tr.queueOf(7200) != 1 || tr.queueOf(72000) != 2 {
		t.Fatalf("thresholds %v", tr.Thresholds)
	}
	for _, bad := range []PolicyParam{{"queue3-h", 1}, {"queue1-h", 0}, {"queue2-h", math.Inf(1)}} {
		if _, err := NewAllocationPolicy("tiresias", []PolicyParam{bad}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := NewAllocationPolicy("fifo", []PolicyParam{{"x", 1}}); err == nil {
		t.Error("a parameter on fifo: no error")
	}
}
