package env

import (
	"strings"
	"testing"
)

const spotHeader = "gpu_model,gpu_capacity_num,cpu_num,node_name\n"

func TestReadAlibabaSpotNodes(t *testing.T) {
	c, err := ReadAlibabaSpotNodes("node_info_df.csv", strings.NewReader(spotHeader+"A10,1,128,0\nH800,8,192,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Machines[0], c.Machines[1]
	if a.Name != "spot-node-0" || a.CPU != 128000 || a.Mem != 128*8192 || a.GPUs != 1 || a.GPUModel != "A10" {
		t.Fatalf("a = %+v", a)
	}
	if b.CPU != 192000 || b.Mem != 192*8192 || b.GPUs != 8 || b.GPUModel != "H800" {
		t.Fatalf("b = %+v", b)
	}
	cases := []parseCase{
		{"no CPU", spotHeader + "A10,1,0,0\n", 2, 3, "cpu_num", "no CPU"},
		{"too many GPUs", spotHeader + "A10,17,128,0\n", 2, 2, "gpu_capacity_num", "17 outside [0, 16]"},
		{"GPUs without model", spotHeader + ",2,128,0\n", 2, 1, "gpu_model", "no model"},
		{"duplicate name", spotHeader + "A10,1,128,0\nA10,1,128,0\n", 3, 4, "node_name", "first on line 2"},
		{"empty name", spotHeader + "A10,1,128,\n", 2, 4, "node_name", "empty node name"},
		{"missing column", "gpu_model,gpu_capacity_num,cpu_num\nA10,1,1\n", 1, 0, "", `header lacks column "node_name"`},
		{"header only", spotHeader, 1, 0, "", "no nodes"},
	}
	for _, tc := range cases {
		_, err := ReadAlibabaSpotNodes("node_info_df.csv", strings.NewReader(tc.input))
		checkParseError(t, "node_info_df.csv", tc, err)
	}
}

// TestBundledSpotNodes: the bundled table is the trace's 4,278 nodes and
// 10,412 GPUs.
func TestBundledSpotNodes(t *testing.T) {
	cs, err := ParseClusterSpec("alibaba-spot")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cs.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Machines) != 4278 || c.TotalGPUs() != 10412 || len(c.Models) != 6 {
		t.Fatalf("%d machines, %d GPUs, models %v", len(c.Machines), c.TotalGPUs(), c.Models)
	}
}

func FuzzReadAlibabaSpotNodes(f *testing.F) {
	f.Add(spotHeader + "GPU-series-1,4,192,0\nA10,1,128,1\n")
	f.Add(spotHeader + "H800,8,192,7\n,0,64,8\n")
	f.Add("node_name,cpu_num,gpu_capacity_num,gpu_model\nx,1,1,A10\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ReadAlibabaSpotNodes("node_info_df.csv", strings.NewReader(in))
		if err != nil {
			checkLoaderError(t, "node_info_df.csv", err)
			return
		}
		checkCluster(t, c)
	})
}
