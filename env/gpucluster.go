package env

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// GPUCluster is a heterogeneous GPU training cluster for the round
// simulator: a number of GPUs of each type in the throughput table, on
// servers of GPUsPerServer GPUs, with servers grouped into racks.
type GPUCluster struct {
	Table *ThroughputTable
	// Types are the table's GPU type indices present (capacity > 0), in
	// name order; Capacity[i] GPUs of Types[i], on servers of
	// GPUsPerServer[i] GPUs.
	Types         []int
	Capacity      []int
	GPUsPerServer []int
	// ServersPerRack groups servers (numbered type by type, in name
	// order) into racks; 0 puts every server in one rack.
	ServersPerRack int
}

// gavelSpecOrder is the order of Gavel's "V:P:K" cluster spec.
var gavelSpecOrder = []string{"v100", "p100", "k80"}

// ParseGPUClusterSpec parses a cluster spec against a throughput table:
// Gavel's "V:P:K" (numbers of v100, p100 and k80 GPUs, e.g. "36:36:36")
// or "type=count,type=count" for any GPU types in the table. gpusPerServer
// (>= 1) applies to every type; each count must be a multiple of it.
func ParseGPUClusterSpec(spec string, t *ThroughputTable, gpusPerServer int) (*GPUCluster, error) {
	if gpusPerServer < 1 {
		return nil, fmt.Errorf("cluster spec %q: GPUs per server must be >= 1, got %d", spec, gpusPerServer)
	}
	counts := map[string]int{}
	if strings.Contains(spec, "=") {
		for _, f := range strings.Split(spec, ",") {
			name, num, ok := strings.Cut(strings.TrimSpace(f), "=")
			if !ok {
				return nil, fmt.Errorf("cluster spec %q: field %q is not type=count", spec, f)
			}
			name = strings.TrimSpace(name)
			n, err := strconv.Atoi(strings.TrimSpace(num))
			if err != nil {
				return nil, fmt.Errorf("cluster spec %q: count of %s: %w", spec, name, err)
			}
			if _, dup := counts[name]; dup {
				return nil, fmt.Errorf("cluster spec %q: %s given twice", spec, name)
			}
			counts[name] = n
		}
	} else {
		fs := strings.Split(spec, ":")
		if len(fs) != len(gavelSpecOrder) {
			return nil, fmt.Errorf("cluster spec %q: want V:P:K (numbers of v100, p100 and k80 GPUs) or type=count,...", spec)
		}
		for i, f := range fs {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("cluster spec %q: %s count: %w", spec, gavelSpecOrder[i], err)
			}
			if n > 0 {
				counts[gavelSpecOrder[i]] = n
			} else if n < 0 {
				counts[gavelSpecOrder[i]] = n
			}
		}
	}
	return NewGPUCluster(t, counts, gpusPerServer)
}

// MaxClusterGPUs bounds a cluster's GPUs (the simulator keeps per-GPU
// state; the 4,278-node spot cluster has about 10,000).
const MaxClusterGPUs = 1 << 20

// NewGPUCluster builds a cluster of counts[type] GPUs of each named type.
func NewGPUCluster(t *ThroughputTable, counts map[string]int, gpusPerServer int) (*GPUCluster, error) {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	c := &GPUCluster{Table: t}
	for _, n := range names {
		k := counts[n]
		g, err := t.GPU(n)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if k < 0 || k%gpusPerServer != 0 {
			return nil, fmt.Errorf("cluster: %d %s GPUs: want a non-negative multiple of %d GPUs per server", k, n, gpusPerServer)
		}
		if k == 0 {
			continue
		}
		if k > MaxClusterGPUs-c.TotalGPUs() {
			return nil, fmt.Errorf("cluster: more than %d GPUs", MaxClusterGPUs)
		}
		c.Types = append(c.Types, g)
		c.Capacity = append(c.Capacity, k)
		c.GPUsPerServer = append(c.GPUsPerServer, gpusPerServer)
	}
	if len(c.Types) == 0 {
		return nil, fmt.Errorf("cluster: no GPUs")
	}
	return c, nil
}

// TotalGPUs is the number of GPUs of all types.
func (c *GPUCluster) TotalGPUs() int {
	n := 0
	for _, k := range c.Capacity {
		n += k
	}
	return n
}

// LargestType is the most GPUs of one type (a gang runs on one type) and
// that type's name.
func (c *GPUCluster) LargestType() (int, string) {
	n, name := 0, ""
	for i, g := range c.Types {
		if c.Capacity[i] > n {
			n, name = c.Capacity[i], c.Table.GPUs[g]
		}
	}
	return n, name
}

// CheckGang reports whether job j's gang can ever be placed: all its GPUs
// of one type (the round simulator never mixes types in a gang), on a
// type with at least Scale GPUs where its job type runs at that scale
// factor. The error names the job and the sizes.
func (c *GPUCluster) CheckGang(j DLJob) error {
	most, name := c.LargestType()
	switch {
	case j.Scale < 1:
		return fmt.Errorf("job %d asks %d GPUs: a gang needs at least 1", j.ID, j.Scale)
	case j.Scale > most:
		return fmt.Errorf("job %d asks a gang of %d GPUs: the cluster has %d GPUs, at most %d of one type (%s), and a gang runs on one type",
			j.ID, j.Scale, c.TotalGPUs(), most, name)
	}
	if j.Model < 0 || j.Model >= len(c.Table.Models) {
		return fmt.Errorf("job %d: job type %d is not in the throughput table (%d types)", j.ID, j.Model, len(c.Table.Models))
	}
	for i, g := range c.Types {
		if c.Capacity[i] >= j.Scale && c.Table.Throughput(j.Model, g, j.Scale, false) > 0 {
			return nil
		}
	}
	return fmt.Errorf("job %d (%s) asks a gang of %d GPUs: no GPU type of the cluster (%s) has %d GPUs on which the throughput table runs it at that scale factor",
		j.ID, c.Table.Models[j.Model], j.Scale, c, j.Scale)
}

// String gives the cluster as type=count pairs.
func (c *GPUCluster) String() string {
	var b strings.Builder
	for i, g := range c.Types {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", c.Table.GPUs[g], c.Capacity[i])
	}
	return b.String()
}
