package env

import (
	"errors"
	"fmt"
	"slices"
)

// Units used throughout env: time in seconds, CPU in millicores, memory in
// MiB, GPU in milli (1000 = one GPU), power in watts, bandwidth in Gbit/s,
// latency in microseconds.

// MilliGPU is the capacity of one GPU in milli-GPU.
const MilliGPU = 1000

// maxModels bounds the GPU models of a cluster: requests keep allowed
// models in a 64-bit mask whose top bit means "no model known".
const maxModels = 63

// MaxGPUsPerMachine bounds the GPUs of one machine so that a GPU set fits in
// a bit mask and per-machine scans stay short.
const MaxGPUsPerMachine = 16

// Machine is the static description of one server.
type Machine struct {
	Name     string
	CPU      int64  // millicores
	Mem      int64  // MiB
	GPUs     int    // number of GPUs (0 for CPU-only machines)
	GPUModel string // "" for CPU-only machines
	// GPUGroup[j] is the NVLink/PCIe-switch group of GPU j: GPUs of one group
	// talk over NVLink; across groups traffic crosses the PCIe root or QPI.
	GPUGroup []uint8
	// GPUNUMA[j] is the NUMA socket GPU j hangs off.
	GPUNUMA []uint8
	IdleW   float64 // power draw when idle
	PeakW   float64 // power draw at full utilisation
	Rack    int     // index into Cluster.Racks
}

// Rack is a set of machines under one top-of-rack switch.
type Rack struct {
	Name         string
	Leaf         int     // index into Cluster.Leaves
	UplinkGbps   float64 // ToR uplink bandwidth to the leaf layer
	PowerBudgetW float64 // power cap of the rack (PDU budget)
	Machines     []int   // machine indices, ascending
}

// Leaf is a leaf (aggregation) switch above several racks.
type Leaf struct {
	Name       string
	Zone       int     // index into Cluster.Zones
	UplinkGbps float64 // leaf uplink bandwidth to the spine of its zone
}

// Zone is an availability zone (a spine and everything under it).
type Zone struct {
	Name string
}

// Network holds the per-level link parameters of the tree topology
// machine - ToR - leaf - spine(zone) - inter-zone.
type Network struct {
	NICGbps      float64 // machine to ToR
	RackLatUs    float64 // one hop through the ToR (same rack)
	LeafLatUs    float64 // same leaf, different rack
	ZoneLatUs    float64 // same zone, different leaf
	InterZoneUs  float64 // different zones
	InterZoneGbp float64 // inter-zone link bandwidth
}

// DefaultNetwork is a typical 25G data-centre fabric.
var DefaultNetwork = Network{
	NICGbps:      25,
	RackLatUs:    5,
	LeafLatUs:    15,
	ZoneLatUs:    40,
	InterZoneUs:  500,
	InterZoneGbp: 400,
}

// Cluster is the static topology: machines, racks, leaves, zones and links.
// It never changes during a simulation; dynamic state lives in State.
type Cluster struct {
	Machines []Machine
	Racks    []Rack
	Leaves   []Leaf
	Zones    []Zone
	Net      Network
	// Models lists the GPU model names present, sorted; Machine.GPUModel is
	// one of them. ModelIndex maps a name back.
	Models []string
}

// ModelIndex returns the index of a GPU model in c.Models, or -1.
func (c *Cluster) ModelIndex(name string) int {
	for i, m := range c.Models {
		if m == name {
			return i
		}
	}
	return -1
}

// TotalGPUs is the number of GPUs in the cluster.
func (c *Cluster) TotalGPUs() int {
	n := 0
	for i := range c.Machines {
		n += c.Machines[i].GPUs
	}
	return n
}

// Hops returns the topology distance between two machines: 0 same machine,
// 1 same rack, 2 same leaf, 3 same zone, 4 different zones.
func (c *Cluster) Hops(a, b int) int {
	if a == b {
		return 0
	}
	ra, rb := c.Machines[a].Rack, c.Machines[b].Rack
	if ra == rb {
		return 1
	}
	la, lb := c.Racks[ra].Leaf, c.Racks[rb].Leaf
	if la == lb {
		return 2
	}
	if c.Leaves[la].Zone == c.Leaves[lb].Zone {
		return 3
	}
	return 4
}

// LatencyUs is the one-way network latency between two machines.
func (c *Cluster) LatencyUs(a, b int) float64 {
	switch c.Hops(a, b) {
	case 0:
		return 0
	case 1:
		return c.Net.RackLatUs
	case 2:
		return c.Net.LeafLatUs
	case 3:
		return c.Net.ZoneLatUs
	default:
		return c.Net.InterZoneUs
	}
}

// BandwidthGbps is the bottleneck bandwidth of the path between two machines
// on an idle network.
func (c *Cluster) BandwidthGbps(a, b int) float64 {
	bw := c.Net.NICGbps
	h := c.Hops(a, b)
	if h == 0 {
		return 0 // local; no network involved
	}
	if h >= 2 {
		bw = min(bw, c.Racks[c.Machines[a].Rack].UplinkGbps, c.Racks[c.Machines[b].Rack].UplinkGbps)
	}
	if h >= 3 {
		bw = min(bw, c.Leaves[c.Racks[c.Machines[a].Rack].Leaf].UplinkGbps, c.Leaves[c.Racks[c.Machines[b].Rack].Leaf].UplinkGbps)
	}
	if h == 4 {
		bw = min(bw, c.Net.InterZoneGbp)
	}
	return bw
}

// Validate checks the internal consistency of a cluster: indices in range,
// capacities positive, GPU groups sized to the GPU count, racks listing
// exactly their machines.
func (c *Cluster) Validate() error {
	if len(c.Machines) == 0 {
		return errors.New("cluster has no machines")
	}
	if len(c.Racks) == 0 || len(c.Leaves) == 0 || len(c.Zones) == 0 {
		return errors.New("cluster has no racks, leaves or zones")
	}
	if len(c.Models) > maxModels {
		return fmt.Errorf("cluster has %d GPU models, at most %d are supported", len(c.Models), maxModels)
	}
	count := make([]int, len(c.Racks))
	for i := range c.Machines {
		m := &c.Machines[i]
		switch {
		case m.CPU <= 0:
			return fmt.Errorf("machine %d (%s): cpu %d must be > 0", i, m.Name, m.CPU)
		case m.Mem <= 0:
			return fmt.Errorf("machine %d (%s): memory %d must be > 0", i, m.Name, m.Mem)
		case m.GPUs < 0 || m.GPUs > MaxGPUsPerMachine:
			return fmt.Errorf("machine %d (%s): %d GPUs outside [0, %d]", i, m.Name, m.GPUs, MaxGPUsPerMachine)
		case m.GPUs > 0 && c.ModelIndex(m.GPUModel) < 0:
			return fmt.Errorf("machine %d (%s): GPU model %q not in cluster model list", i, m.Name, m.GPUModel)
		case len(m.GPUGroup) != m.GPUs || len(m.GPUNUMA) != m.GPUs:
			return fmt.Errorf("machine %d (%s): GPU group/NUMA lists sized %d/%d, want %d", i, m.Name, len(m.GPUGroup), len(m.GPUNUMA), m.GPUs)
		case m.Rack < 0 || m.Rack >= len(c.Racks):
			return fmt.Errorf("machine %d (%s): rack %d out of range", i, m.Name, m.Rack)
		case m.IdleW < 0 || m.PeakW < m.IdleW:
			return fmt.Errorf("machine %d (%s): power idle %.0f W, peak %.0f W", i, m.Name, m.IdleW, m.PeakW)
		}
		count[m.Rack]++
	}
	for r := range c.Racks {
		rk := &c.Racks[r]
		if rk.Leaf < 0 || rk.Leaf >= len(c.Leaves) {
			return fmt.Errorf("rack %d (%s): leaf %d out of range", r, rk.Name, rk.Leaf)
		}
		if len(rk.Machines) != count[r] {
			return fmt.Errorf("rack %d (%s): lists %d machines, %d machines point to it", r, rk.Name, len(rk.Machines), count[r])
		}
		for _, m := range rk.Machines {
			if m < 0 || m >= len(c.Machines) || c.Machines[m].Rack != r {
				return fmt.Errorf("rack %d (%s): machine %d does not belong to it", r, rk.Name, m)
			}
		}
	}
	for l := range c.Leaves {
		if z := c.Leaves[l].Zone; z < 0 || z >= len(c.Zones) {
			return fmt.Errorf("leaf %d (%s): zone %d out of range", l, c.Leaves[l].Name, z)
		}
	}
	return nil
}

// finish derives the fields that follow from the machines: the model list and
// the racks' machine lists. Builders call it after filling Machines and the
// Rack/Leaf/Zone tables.
func (c *Cluster) finish() {
	seen := map[string]bool{}
	c.Models = c.Models[:0]
	for i := range c.Machines {
		if m := c.Machines[i].GPUModel; m != "" && !seen[m] {
			seen[m] = true
			c.Models = append(c.Models, m)
		}
	}
	slices.Sort(c.Models)
	for r := range c.Racks {
		c.Racks[r].Machines = c.Racks[r].Machines[:0]
	}
	for i := range c.Machines {
		r := c.Machines[i].Rack
		c.Racks[r].Machines = append(c.Racks[r].Machines, i)
	}
}
