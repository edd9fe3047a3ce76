package env

// Hardware defaults shared by the builders: power envelopes per machine
// class and the intra-machine GPU topology.

// gpuPower is the per-GPU (idle, peak) power draw in watts by model. The
// Alibaba codes G1-G3 are undisclosed; they get a modern data-centre GPU's
// envelope.
var gpuPower = map[string][2]float64{
	"P100":    {30, 250},
	"T4":      {10, 70},
	"V100M16": {40, 300},
	"V100M32": {40, 300},
	"A10":     {20, 150},
	"A100":    {50, 400},
	"H100":    {70, 700},
	"G1":      {40, 300},
	"G2":      {40, 300},
	"G3":      {50, 400},
}

// hostPower is the (idle, peak) draw of the host itself per 1000 millicores,
// plus a fixed chassis base: a 96-core box idles near 150 W and peaks near
// 500 W.
const (
	hostBaseIdleW   = 60.0
	hostIdlePerCore = 1.0
	hostPeakPerCore = 4.5
)

// machinePower returns a machine's idle and peak watts.
func machinePower(cpuMilli int64, gpus int, model string) (idle, peak float64) {
	cores := float64(cpuMilli) / 1000
	idle = hostBaseIdleW + hostIdlePerCore*cores
	peak = hostBaseIdleW + hostPeakPerCore*cores
	if gpus > 0 {
		p, ok := gpuPower[model]
		if !ok {
			p = [2]float64{40, 300}
		}
		idle += float64(gpus) * p[0]
		peak += float64(gpus) * p[1]
	}
	return idle, peak
}

// gpuLayout returns the NVLink/PCIe-switch group and NUMA socket of each of
// n GPUs: up to 4 GPUs share one NVLink island; 8-GPU boxes have two
// islands, one per socket (a DGX-1-like hybrid cube mesh).
func gpuLayout(n int) (group, numa []uint8) {
	group = make([]uint8, n)
	numa = make([]uint8, n)
	for j := 0; j < n; j++ {
		group[j] = uint8(j / 4)
		if n >= 2 {
			numa[j] = uint8(j * 2 / n)
		}
	}
	return group, numa
}

// Rack layout defaults for builders whose source has no topology.
const (
	defaultRackSize      = 20
	defaultRacksPerLeaf  = 8
	defaultLeavesPerZone = 8
	defaultRackUplink    = 100.0 // Gbit/s ToR uplink
	defaultLeafUplink    = 400.0
	// A rack's power budget: its machines' peak sum times this factor
	// (racks are commonly oversubscribed on power).
	rackPowerOversub = 0.8
)

// layoutTopology fills racks, leaves and zones for machines that already
// carry a rack index, grouping racks into leaves and leaves into zones in
// order, then derives rack power budgets.
func layoutTopology(c *Cluster, nracks int) {
	c.Racks = make([]Rack, nracks)
	nleaves := (nracks + defaultRacksPerLeaf - 1) / defaultRacksPerLeaf
	c.Leaves = make([]Leaf, nleaves)
	nzones := (nleaves + defaultLeavesPerZone - 1) / defaultLeavesPerZone
	c.Zones = make([]Zone, nzones)
	for z := range c.Zones {
		c.Zones[z] = Zone{Name: "zone-" + itoa(int64(z))}
	}
	for l := range c.Leaves {
		c.Leaves[l] = Leaf{Name: "leaf-" + itoa(int64(l)), Zone: l / defaultLeavesPerZone, UplinkGbps: defaultLeafUplink}
	}
	for r := range c.Racks {
		c.Racks[r] = Rack{Name: "rack-" + itoa(int64(r)), Leaf: r / defaultRacksPerLeaf, UplinkGbps: defaultRackUplink}
	}
	c.Net = DefaultNetwork
	c.finish()
	for r := range c.Racks {
		peak := 0.0
		for _, m := range c.Racks[r].Machines {
			peak += c.Machines[m].PeakW
		}
		c.Racks[r].PowerBudgetW = peak * rackPowerOversub
	}
}

// newMachine builds a machine with derived power and GPU layout.
func newMachine(name string, cpu, mem int64, gpus int, model string, rack int) Machine {
	idle, peak := machinePower(cpu, gpus, model)
	g, n := gpuLayout(gpus)
	if gpus == 0 {
		model = ""
	}
	return Machine{Name: name, CPU: cpu, Mem: mem, GPUs: gpus, GPUModel: model, GPUGroup: g, GPUNUMA: n, IdleW: idle, PeakW: peak, Rack: rack}
}

// Subset returns a new cluster of the machines keep accepts, in order, with
// the racks that still hold machines (leaves and zones kept as they are).
func (c *Cluster) Subset(keep func(*Machine) bool) *Cluster {
	out := &Cluster{Leaves: c.Leaves, Zones: c.Zones, Net: c.Net}
	rackMap := make([]int, len(c.Racks))
	for i := range rackMap {
		rackMap[i] = -1
	}
	for i := range c.Machines {
		m := c.Machines[i]
		if !keep(&m) {
			continue
		}
		if rackMap[m.Rack] < 0 {
			rackMap[m.Rack] = len(out.Racks)
			rk := c.Racks[m.Rack]
			rk.Machines = nil
			out.Racks = append(out.Racks, rk)
		}
		m.Rack = rackMap[m.Rack]
		out.Machines = append(out.Machines, m)
	}
	out.finish()
	return out
}

// GPUMachines returns the machines that have at least one GPU.
func (c *Cluster) GPUMachines() *Cluster {
	return c.Subset(func(m *Machine) bool { return m.GPUs > 0 })
}
