package env

import (
	"errors"
	"strings"
	"testing"
)

// The fuzz properties shared by all loaders: never panic; an error is a
// *ParseError naming the file; on success the result validates.

func checkLoaderError(t *testing.T, file string, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		// Cluster.Validate errors are the only other kind; they mean the
		// loader built an invalid cluster, which the property forbids.
		t.Fatalf("error is not a *ParseError: %v", err)
	}
	if pe.File != file || pe.Line < 1 || pe.Column < 0 || !strings.HasPrefix(err.Error(), file+":") {
		t.Fatalf("bad ParseError %+v: %v", *pe, err)
	}
}

func checkWorkload(t *testing.T, w *Workload) {
	t.Helper()
	if len(w.Jobs) == 0 {
		t.Fatal("success with no jobs")
	}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if err := j.Validate(); err != nil {
			t.Fatalf("job %d does not validate: %v", i, err)
		}
		if j.ID != i {
			t.Fatalf("job %d has ID %d", i, j.ID)
		}
		if i > 0 && j.Arrival < w.Jobs[i-1].Arrival {
			t.Fatalf("job %d arrives at %v before job %d at %v", i, j.Arrival, i-1, w.Jobs[i-1].Arrival)
		}
		if j.Duration < 1 {
			t.Fatalf("job %d duration %v < 1", i, j.Duration)
		}
	}
}

func checkCluster(t *testing.T, c *Cluster) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("cluster does not validate: %v", err)
	}
	// A state over it must be usable.
	s := NewState(c, 1)
	if s.CapCPU <= 0 || s.CapGPU != int64(c.TotalGPUs())*MilliGPU {
		t.Fatalf("state caps CPU %d GPU %d", s.CapCPU, s.CapGPU)
	}
}

func FuzzReadAlibabaGPUNodes(f *testing.F) {
	f.Add(nodesHeader + "openb-node-0000,32000,262144,0,\nopenb-node-0227,96000,786432,8,G2\n")
	f.Add(nodesHeader + "a,64000,262144,2,T4\nb,96000,524288,4,V100M16\nc,1000,1,1,P100\n")
	f.Add("model,gpu,sn,memory_mib,cpu_milli\nT4,1,x,1,1\n")
	f.Add(nodesHeader + "\"a\nb\",1,1,16,A10\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ReadAlibabaGPUNodes("nodes.csv", strings.NewReader(in))
		if err != nil {
			checkLoaderError(t, "nodes.csv", err)
			return
		}
		checkCluster(t, c)
	})
}

func FuzzReadAlibabaGPUPods(f *testing.F) {
	f.Add(podsHeader + "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n" +
		"openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497\n")
	f.Add(podsHeader + "openb-pod-5705,8000,30517,1,470,,BE,Pending,12194774,12196860,\n" +
		"p,1,1,0,0,T4|G2,Guaranteed,Failed,0,0,0\n")
	f.Add(podsHeader + "x,1,1,1,1500,V100M16,LS,Running,5,6,5.5\nz,1,1,2,1000,,BE,Running,1e9,2e9,1.5e9\n")
	f.Fuzz(func(t *testing.T, in string) {
		w, err := ReadAlibabaGPUPods("pods.csv", strings.NewReader(in), GPUTraceOptions{Compress: 1})
		if err != nil {
			checkLoaderError(t, "pods.csv", err)
			return
		}
		checkWorkload(t, w)
		for i := range w.Jobs {
			j := &w.Jobs[i]
			if j.GPUs > 0 && j.GPUMilli == 0 || j.GPUs > 1 && j.GPUMilli != MilliGPU {
				t.Fatalf("job %d: %d GPUs x %d milli", i, j.GPUs, j.GPUMilli)
			}
			for _, m := range j.GPUModels {
				if m == "" {
					t.Fatalf("job %d: empty model in %q", i, j.GPUModels)
				}
			}
		}
	})
}

func FuzzReadAlibaba2018Machines(f *testing.F) {
	f.Add("m_1,0,219,17,96,100,USING\nm_1,148984,219,17,96,100,USING\nm_10,0,128,17,96,100,USING\n")
	f.Add("m_100,0,9,9,96,100,USING\nm_2,5,9,10,64,50.5,IMPORT_INSTALLING\nm_3,0,10,10,1,1e-3,USING\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ReadAlibaba2018Machines("machine_meta.csv", strings.NewReader(in), Alibaba2018Options{})
		if err != nil {
			checkLoaderError(t, "machine_meta.csv", err)
			return
		}
		checkCluster(t, c)
		for i := range c.Machines {
			if c.Machines[i].GPUs != 0 {
				t.Fatalf("machine %d has GPUs", i)
			}
		}
	})
}

func FuzzReadAlibaba2018Batch(f *testing.F) {
	f.Add(batchHeader + "0,539,116.38162544169612,1.0,0.005404705821447985,1,1,283,0\n" +
		"2831,0,131.96446700507613,0.5,0.008935366137757875,1750,9550,197,0\n")
	f.Add(batchHeader + "1,7448,73.59701492537313,0.5,0.007863743431781119,9,23,67,0\n3,0,0,0,0,0,0,1,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		// Cap the expansion: instances_num may be up to 2^30.
		w, err := ReadAlibaba2018Batch("jobs.csv", strings.NewReader(in), Alibaba2018Options{MaxInstances: 3})
		if err != nil {
			checkLoaderError(t, "jobs.csv", err)
			return
		}
		checkWorkload(t, w)
		for i := range w.Jobs {
			if j := &w.Jobs[i]; j.CPU < 1 || j.Mem < 1 || j.GPUs != 0 {
				t.Fatalf("job %d: cpu %d mem %d GPUs %d", i, j.CPU, j.Mem, j.GPUs)
			}
		}
	})
}
