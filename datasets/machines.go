package datasets

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/tegrl/tegrl/env"
)

// MetaTopology holds, in a machines file, the cluster's tables that are
// not one row per machine, as JSON (topologyJSON): network parameters,
// racks, leaves, zones and the GPU model list.
const MetaTopology = "tegrl.topology"

func init() { knownKeys[KindMachines] = []string{MetaTopology} }

// Machines columns, in file order (docs/datasets.md).
const (
	mcName = iota
	mcCPU
	mcMem
	mcGPUs
	mcGPUModel
	mcGPUGroup
	mcGPUNUMA
	mcIdleW
	mcPeakW
	mcRack
	mcRackName
	mcLeaf
	mcLeafName
	mcZone
	mcZoneName
)

// MachinesSchema is the schema of a machines file (without its metadata):
// one row per env.Machine, in cluster order. The leaf and zone columns and
// the names repeat the topology tables for readers that want one flat
// table; the reader checks that they agree.
var MachinesSchema = arrow.NewSchema([]arrow.Field{
	mcName:     {Name: "name", Type: arrow.BinaryTypes.String},
	mcCPU:      {Name: "cpu_milli", Type: arrow.PrimitiveTypes.Int64},
	mcMem:      {Name: "mem_mib", Type: arrow.PrimitiveTypes.Int64},
	mcGPUs:     {Name: "gpus", Type: arrow.PrimitiveTypes.Int32},
	mcGPUModel: {Name: "gpu_model", Type: arrow.BinaryTypes.String},
	mcGPUGroup: {Name: "gpu_group", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Uint8), Nullable: true},
	mcGPUNUMA:  {Name: "gpu_numa", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Uint8), Nullable: true},
	mcIdleW:    {Name: "idle_w", Type: arrow.PrimitiveTypes.Float64},
	mcPeakW:    {Name: "peak_w", Type: arrow.PrimitiveTypes.Float64},
	mcRack:     {Name: "rack", Type: arrow.PrimitiveTypes.Int32},
	mcRackName: {Name: "rack_name", Type: arrow.BinaryTypes.String},
	mcLeaf:     {Name: "leaf", Type: arrow.PrimitiveTypes.Int32},
	mcLeafName: {Name: "leaf_name", Type: arrow.BinaryTypes.String},
	mcZone:     {Name: "zone", Type: arrow.PrimitiveTypes.Int32},
	mcZoneName: {Name: "zone_name", Type: arrow.BinaryTypes.String},
}, nil)

// topologyJSON is the MetaTopology value. Racks list no machines: the
// machine rows give them.
type topologyJSON struct {
	Network struct {
		NICGbps      float64 `json:"nic_gbps"`
		RackLatUs    float64 `json:"rack_latency_us"`
		LeafLatUs    float64 `json:"leaf_latency_us"`
		ZoneLatUs    float64 `json:"zone_latency_us"`
		InterZoneUs  float64 `json:"inter_zone_latency_us"`
		InterZoneGbp float64 `json:"inter_zone_gbps"`
	} `json:"network"`
	Racks  []topoRack `json:"racks"`
	Leaves []topoLeaf `json:"leaves"`
	Zones  []topoZone `json:"zones"`
	// Models is env.Cluster.Models; null and [] are kept apart so that a
	// cluster round-trips exactly.
	Models []string `json:"models"`
}

type topoRack struct {
	Name         string  `json:"name"`
	Leaf         int     `json:"leaf"`
	UplinkGbps   float64 `json:"uplink_gbps"`
	PowerBudgetW float64 `json:"power_budget_w"`
}

type topoLeaf struct {
	Name       string  `json:"name"`
	Zone       int     `json:"zone"`
	UplinkGbps float64 `json:"uplink_gbps"`
}

type topoZone struct {
	Name string `json:"name"`
}

func encodeTopology(c *env.Cluster) (string, error) {
	var t topologyJSON
	n := c.Net
	t.Network.NICGbps, t.Network.RackLatUs, t.Network.LeafLatUs = n.NICGbps, n.RackLatUs, n.LeafLatUs
	t.Network.ZoneLatUs, t.Network.InterZoneUs, t.Network.InterZoneGbp = n.ZoneLatUs, n.InterZoneUs, n.InterZoneGbp
	t.Racks = make([]topoRack, len(c.Racks))
	for i, r := range c.Racks {
		t.Racks[i] = topoRack{r.Name, r.Leaf, r.UplinkGbps, r.PowerBudgetW}
	}
	t.Leaves = make([]topoLeaf, len(c.Leaves))
	for i, l := range c.Leaves {
		t.Leaves[i] = topoLeaf{l.Name, l.Zone, l.UplinkGbps}
	}
	t.Zones = make([]topoZone, len(c.Zones))
	for i, z := range c.Zones {
		t.Zones[i] = topoZone{z.Name}
	}
	t.Models = c.Models
	b, err := json.Marshal(&t)
	if err != nil {
		return "", fmt.Errorf("topology: %w", err)
	}
	return string(b), nil
}

// checkCluster validates what env.Cluster.Validate leaves out and a file
// can hold: finite power, bandwidth and latency figures, and names and
// indices that fit the columns.
func checkCluster(c *env.Cluster) error {
	n := c.Net
	for _, v := range []struct {
		name string
		x    float64
	}{{"nic_gbps", n.NICGbps}, {"rack_latency_us", n.RackLatUs}, {"leaf_latency_us", n.LeafLatUs},
		{"zone_latency_us", n.ZoneLatUs}, {"inter_zone_latency_us", n.InterZoneUs}, {"inter_zone_gbps", n.InterZoneGbp}} {
		if !finite(v.x) || v.x < 0 {
			return fmt.Errorf("network %s %v must be finite and >= 0", v.name, v.x)
		}
	}
	for i, r := range c.Racks {
		if !finite(r.UplinkGbps) || r.UplinkGbps < 0 || !finite(r.PowerBudgetW) || r.PowerBudgetW < 0 {
			return fmt.Errorf("rack %d (%s): uplink %v Gbit/s and power budget %v W must be finite and >= 0", i, r.Name, r.UplinkGbps, r.PowerBudgetW)
		}
	}
	for i, l := range c.Leaves {
		if !finite(l.UplinkGbps) || l.UplinkGbps < 0 {
			return fmt.Errorf("leaf %d (%s): uplink %v Gbit/s must be finite and >= 0", i, l.Name, l.UplinkGbps)
		}
	}
	if len(c.Racks) > maxInt32 {
		return fmt.Errorf("%d racks do not fit int32", len(c.Racks))
	}
	return nil
}

func checkMachine(m *env.Machine) (string, error) {
	switch {
	case m.CPU <= 0:
		return "cpu_milli", fmt.Errorf("%d must be > 0", m.CPU)
	case m.Mem <= 0:
		return "mem_mib", fmt.Errorf("%d must be > 0", m.Mem)
	case m.GPUs < 0 || m.GPUs > env.MaxGPUsPerMachine:
		return "gpus", fmt.Errorf("%d outside [0, %d]", m.GPUs, env.MaxGPUsPerMachine)
	case len(m.GPUGroup) != m.GPUs:
		return "gpu_group", fmt.Errorf("%d entries for %d GPUs", len(m.GPUGroup), m.GPUs)
	case len(m.GPUNUMA) != m.GPUs:
		return "gpu_numa", fmt.Errorf("%d entries for %d GPUs", len(m.GPUNUMA), m.GPUs)
	case !finite(m.IdleW) || m.IdleW < 0:
		return "idle_w", fmt.Errorf("%v must be finite and >= 0", m.IdleW)
	case !finite(m.PeakW) || m.PeakW < m.IdleW:
		return "peak_w", fmt.Errorf("%v must be finite and >= idle_w %v", m.PeakW, m.IdleW)
	}
	return "", nil
}

// WriteCluster writes c as the machines file path.
func WriteCluster(path string, c *env.Cluster, opt WriterOptions) error {
	schema, err := machinesSchema(c, &opt)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	bw, err := createBatchWriter(path, schema, opt)
	if err != nil {
		return err
	}
	return writeMachines(bw, c)
}

// WriteClusterTo writes c as a machines file to out.
func WriteClusterTo(out io.Writer, c *env.Cluster, opt WriterOptions) error {
	schema, err := machinesSchema(c, &opt)
	if err != nil {
		return fmt.Errorf("machines: %w", err)
	}
	bw, err := newBatchWriter("machines", out, schema, opt)
	if err != nil {
		return err
	}
	return writeMachines(bw, c)
}

func machinesSchema(c *env.Cluster, opt *WriterOptions) (*arrow.Schema, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkCluster(c); err != nil {
		return nil, err
	}
	topo, err := encodeTopology(c)
	if err != nil {
		return nil, err
	}
	md := baseMetadata(KindMachines, opt, [][2]string{{MetaTopology, topo}})
	return arrow.NewSchema(MachinesSchema.Fields(), &md), nil
}

// writeMachines streams the machine rows; the cluster was validated.
func writeMachines(bw *batchWriter, c *env.Cluster) error {
	defer bw.close()
	f := bw.rb.Fields()
	name, model := f[mcName].(*array.StringBuilder), f[mcGPUModel].(*array.StringBuilder)
	cpu, mem := f[mcCPU].(*array.Int64Builder), f[mcMem].(*array.Int64Builder)
	gpus := f[mcGPUs].(*array.Int32Builder)
	group, numa := f[mcGPUGroup].(*array.ListBuilder), f[mcGPUNUMA].(*array.ListBuilder)
	groupV, numaV := group.ValueBuilder().(*array.Uint8Builder), numa.ValueBuilder().(*array.Uint8Builder)
	idle, peak := f[mcIdleW].(*array.Float64Builder), f[mcPeakW].(*array.Float64Builder)
	rack, leaf, zone := f[mcRack].(*array.Int32Builder), f[mcLeaf].(*array.Int32Builder), f[mcZone].(*array.Int32Builder)
	rackName, leafName, zoneName := f[mcRackName].(*array.StringBuilder), f[mcLeafName].(*array.StringBuilder), f[mcZoneName].(*array.StringBuilder)
	for i := range c.Machines {
		m := &c.Machines[i]
		if col, err := checkMachine(m); err != nil {
			return bw.fail(fmt.Errorf("%s: machine %d (%s): column %s: %w", bw.name, i, m.Name, col, err))
		}
		rk := &c.Racks[m.Rack]
		lf := &c.Leaves[rk.Leaf]
		bw.startRow()
		name.Append(m.Name)
		cpu.Append(m.CPU)
		mem.Append(m.Mem)
		gpus.Append(int32(m.GPUs))
		model.Append(m.GPUModel)
		for _, l := range []struct {
			b *array.ListBuilder
			v *array.Uint8Builder
			x []uint8
		}{{group, groupV, m.GPUGroup}, {numa, numaV, m.GPUNUMA}} {
			if l.x == nil {
				l.b.AppendNull()
			} else {
				l.b.Append(true)
				l.v.AppendValues(l.x, nil)
			}
		}
		idle.Append(m.IdleW)
		peak.Append(m.PeakW)
		rack.Append(int32(m.Rack))
		rackName.Append(rk.Name)
		leaf.Append(int32(rk.Leaf))
		leafName.Append(lf.Name)
		zone.Append(int32(lf.Zone))
		zoneName.Append(c.Zones[lf.Zone].Name)
		if err := bw.endRow(len(m.Name) + len(rk.Name) + len(lf.Name) + 2*m.GPUs + 100); err != nil {
			return err
		}
	}
	return bw.close()
}

// ReadCluster reads the machines file path into a cluster.
func ReadCluster(path string, opt ReaderOptions) (*env.Cluster, error) {
	br, err := openPath(path, KindMachines, MachinesSchema, opt)
	if err != nil {
		return nil, err
	}
	defer br.close()
	return readCluster(br)
}

// ReadClusterFrom reads a machines file from src; name names it in errors.
func ReadClusterFrom(name string, src ReadAtSeeker, opt ReaderOptions) (*env.Cluster, error) {
	br, err := newBatchReader(name, src, KindMachines, MachinesSchema, opt)
	if err != nil {
		return nil, err
	}
	defer br.close()
	return readCluster(br)
}

func readCluster(br *batchReader) (*env.Cluster, error) {
	fileErr := func(format string, args ...any) error {
		return &DataError{File: br.name, Batch: -1, Row: -1, Err: fmt.Errorf(format, args...)}
	}
	var t topologyJSON
	dec := json.NewDecoder(strings.NewReader(br.meta[MetaTopology]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fileErr("%s: %w", MetaTopology, err)
	}
	if dec.More() {
		return nil, fileErr("%s: trailing data after the JSON object", MetaTopology)
	}
	c := &env.Cluster{Models: t.Models}
	n := &c.Net
	n.NICGbps, n.RackLatUs, n.LeafLatUs = t.Network.NICGbps, t.Network.RackLatUs, t.Network.LeafLatUs
	n.ZoneLatUs, n.InterZoneUs, n.InterZoneGbp = t.Network.ZoneLatUs, t.Network.InterZoneUs, t.Network.InterZoneGbp
	c.Racks = make([]env.Rack, len(t.Racks))
	for i, r := range t.Racks {
		c.Racks[i] = env.Rack{Name: r.Name, Leaf: r.Leaf, UplinkGbps: r.UplinkGbps, PowerBudgetW: r.PowerBudgetW}
	}
	c.Leaves = make([]env.Leaf, len(t.Leaves))
	for i, l := range t.Leaves {
		c.Leaves[i] = env.Leaf{Name: l.Name, Zone: l.Zone, UplinkGbps: l.UplinkGbps}
	}
	c.Zones = make([]env.Zone, len(t.Zones))
	for i, z := range t.Zones {
		c.Zones[i] = env.Zone{Name: z.Name}
	}
	for l := range c.Leaves {
		if z := c.Leaves[l].Zone; z < 0 || z >= len(c.Zones) {
			return nil, fileErr("%s: leaf %d (%s): zone %d out of range", MetaTopology, l, c.Leaves[l].Name, z)
		}
	}
	for r := range c.Racks {
		if l := c.Racks[r].Leaf; l < 0 || l >= len(c.Leaves) {
			return nil, fileErr("%s: rack %d (%s): leaf %d out of range", MetaTopology, r, c.Racks[r].Name, l)
		}
	}
	if err := checkCluster(c); err != nil {
		return nil, fileErr("%s: %w", MetaTopology, err)
	}
	for {
		rec, err := br.nextBatch()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := br.decodeSafely(func() error { return decodeMachines(br, rec, c) }); err != nil {
			return nil, err
		}
	}
	for i := range c.Machines {
		r := c.Machines[i].Rack
		c.Racks[r].Machines = append(c.Racks[r].Machines, i)
	}
	if err := c.Validate(); err != nil {
		return nil, fileErr("%w", err)
	}
	return c, nil
}

func decodeMachines(br *batchReader, rec arrow.RecordBatch, c *env.Cluster) error {
	if err := br.checkNulls(rec); err != nil {
		return err
	}
	col := rec.Columns()
	name, model := col[mcName].(*array.String), col[mcGPUModel].(*array.String)
	cpu, mem := col[mcCPU].(*array.Int64), col[mcMem].(*array.Int64)
	gpus := col[mcGPUs].(*array.Int32)
	group, numa := col[mcGPUGroup].(*array.List), col[mcGPUNUMA].(*array.List)
	groupV, numaV := group.ListValues().(*array.Uint8).Uint8Values(), numa.ListValues().(*array.Uint8).Uint8Values()
	idle, peak := col[mcIdleW].(*array.Float64), col[mcPeakW].(*array.Float64)
	rack, leaf, zone := col[mcRack].(*array.Int32), col[mcLeaf].(*array.Int32), col[mcZone].(*array.Int32)
	rackName, leafName, zoneName := col[mcRackName].(*array.String), col[mcLeafName].(*array.String), col[mcZoneName].(*array.String)
	uint8s := func(l *array.List, v []uint8, i int) []uint8 {
		if l.IsNull(i) {
			return nil
		}
		lo, hi := l.ValueOffsets(i)
		out := make([]uint8, hi-lo) // empty, not nil: env keeps them apart
		copy(out, v[lo:hi])
		return out
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		m := env.Machine{
			Name:     strings.Clone(name.Value(i)),
			CPU:      cpu.Value(i),
			Mem:      mem.Value(i),
			GPUs:     int(gpus.Value(i)),
			GPUModel: strings.Clone(model.Value(i)),
			GPUGroup: uint8s(group, groupV, i),
			GPUNUMA:  uint8s(numa, numaV, i),
			IdleW:    idle.Value(i),
			PeakW:    peak.Value(i),
			Rack:     int(rack.Value(i)),
		}
		if col, err := checkMachine(&m); err != nil {
			return br.rowErr(i, col, "%w", err)
		}
		if m.Rack < 0 || m.Rack >= len(c.Racks) {
			return br.rowErr(i, "rack", "%d outside [0, %d)", m.Rack, len(c.Racks))
		}
		rk := &c.Racks[m.Rack]
		lf := &c.Leaves[rk.Leaf]
		switch {
		case rackName.Value(i) != rk.Name:
			return br.rowErr(i, "rack_name", "%q, the topology names rack %d %q", rackName.Value(i), m.Rack, rk.Name)
		case int(leaf.Value(i)) != rk.Leaf:
			return br.rowErr(i, "leaf", "%d, the topology puts rack %d under leaf %d", leaf.Value(i), m.Rack, rk.Leaf)
		case leafName.Value(i) != lf.Name:
			return br.rowErr(i, "leaf_name", "%q, the topology names leaf %d %q", leafName.Value(i), rk.Leaf, lf.Name)
		case int(zone.Value(i)) != lf.Zone:
			return br.rowErr(i, "zone", "%d, the topology puts leaf %d in zone %d", zone.Value(i), rk.Leaf, lf.Zone)
		case zoneName.Value(i) != c.Zones[lf.Zone].Name:
			return br.rowErr(i, "zone_name", "%q, the topology names zone %d %q", zoneName.Value(i), lf.Zone, c.Zones[lf.Zone].Name)
		}
		c.Machines = append(c.Machines, m)
	}
	return nil
}
