package env

import "io"

// SpotMemoryMiBPerCPU is the memory given to each CPU of a spot-trace
// node. The trace (Duan et al., "GFS: A Preemptive Scheduling Framework
// for GPU Clusters with Predictive Spot Management", ASPLOS 2026) lists
// GPUs and CPUs only; 8 GiB per CPU (1 TiB for a 128-CPU server, the
// memory of an 8-GPU A100 server's usual build) keeps memory from binding
// before GPUs and CPUs do.
const SpotMemoryMiBPerCPU = 8 << 10

// LoadAlibabaSpotNodes reads alibaba-gpu-v2026-spot/node_info_df.csv into
// a cluster ("" reads the bundled copy).
func LoadAlibabaSpotNodes(path string) (*Cluster, error) {
	return loadTable(tableSpotNodes, path, ReadAlibabaSpotNodes)
}

// ReadAlibabaSpotNodes parses the spot trace's node table (columns
// gpu_model, gpu_capacity_num, cpu_num, node_name): 4,278 GPU servers of
// six GPU models. Memory is SpotMemoryMiBPerCPU per CPU. Machines are laid
// into racks of 20 in file order, as the other traces', which have no
// topology either.
func ReadAlibabaSpotNodes(file string, r io.Reader) (*Cluster, error) {
	t, err := newTable(file, r, true, []string{"gpu_model", "gpu_capacity_num", "cpu_num", "node_name"})
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	seen := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		name, err := t.nodeName("node_name", seen)
		if err != nil {
			return nil, err
		}
		cpus, err := t.nonneg("cpu_num", 1<<20)
		if err != nil {
			return nil, err
		}
		if cpus == 0 {
			return nil, t.fail("cpu_num", "node has no CPU")
		}
		gpus, err := t.nonneg("gpu_capacity_num", MaxGPUsPerMachine)
		if err != nil {
			return nil, err
		}
		model := t.str("gpu_model")
		if gpus > 0 && model == "" {
			return nil, t.fail("gpu_model", "node has %d GPUs but no model", gpus)
		}
		idx := len(c.Machines)
		c.Machines = append(c.Machines, newMachine("spot-node-"+name, cpus*1000, cpus*SpotMemoryMiBPerCPU, int(gpus), model, idx/defaultRackSize))
	}
	return finishNodes(file, c)
}
