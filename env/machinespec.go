package env

import (
	"errors"
	"fmt"
	"math"
)

// MachineSpec describes one machine for NewCluster: what a service learns
// of a machine from its cluster manager.
type MachineSpec struct {
	Name     string
	CPU      int64  // millicores
	Mem      int64  // MiB
	GPUs     int    // 0 for CPU-only machines
	GPUModel string // required with GPUs
	// Rack groups machines under one switch and power budget; "" puts the
	// machine in the default racks of 20 machines in order.
	Rack string
	// IdleW and PeakW override the power envelope derived from the
	// hardware (both or neither).
	IdleW, PeakW float64
}

// NewCluster builds a cluster from machine descriptions: racks by name (in
// order of first appearance; unnamed machines fill default racks of 20),
// eight racks a leaf, eight leaves a zone, the default network, rack power
// budgets from the machines' peaks, and the GPU layout and power envelope
// of each machine from its hardware unless given.
func NewCluster(specs []MachineSpec) (*Cluster, error) {
	if len(specs) == 0 {
		return nil, errors.New("cluster: no machines")
	}
	c := &Cluster{Machines: make([]Machine, 0, len(specs))}
	racks := map[string]int{}
	names := make(map[string]int, len(specs))
	nracks, unnamed := 0, 0
	for i := range specs {
		sp := &specs[i]
		switch {
		case sp.Name == "":
			return nil, fmt.Errorf("machine %d: empty name", i)
		case sp.CPU <= 0 || sp.Mem <= 0:
			return nil, fmt.Errorf("machine %d (%s): cpu %d millicores and memory %d MiB must be > 0", i, sp.Name, sp.CPU, sp.Mem)
		case sp.GPUs < 0 || sp.GPUs > MaxGPUsPerMachine:
			return nil, fmt.Errorf("machine %d (%s): %d GPUs outside [0, %d]", i, sp.Name, sp.GPUs, MaxGPUsPerMachine)
		case sp.GPUs > 0 && sp.GPUModel == "":
			return nil, fmt.Errorf("machine %d (%s): %d GPUs without a GPU model", i, sp.Name, sp.GPUs)
		case !(sp.IdleW >= 0) || !(sp.PeakW >= sp.IdleW) || math.IsInf(sp.PeakW, 0):
			return nil, fmt.Errorf("machine %d (%s): power idle %v W, peak %v W", i, sp.Name, sp.IdleW, sp.PeakW)
		}
		if j, dup := names[sp.Name]; dup {
			return nil, fmt.Errorf("machine %d: name %q already used by machine %d", i, sp.Name, j)
		}
		names[sp.Name] = i
		var rack int
		if sp.Rack == "" {
			// Default racks: a new one every defaultRackSize unnamed machines.
			key := "\x00default-" + itoa(int64(unnamed/defaultRackSize))
			unnamed++
			r, ok := racks[key]
			if !ok {
				r = nracks
				racks[key] = r
				nracks++
			}
			rack = r
		} else {
			r, ok := racks[sp.Rack]
			if !ok {
				r = nracks
				racks[sp.Rack] = r
				nracks++
			}
			rack = r
		}
		m := newMachine(sp.Name, sp.CPU, sp.Mem, sp.GPUs, sp.GPUModel, rack)
		if sp.PeakW > 0 {
			m.IdleW, m.PeakW = sp.IdleW, sp.PeakW
		}
		c.Machines = append(c.Machines, m)
	}
	layoutTopology(c, nracks)
	for name, r := range racks {
		if name[0] != 0 {
			c.Racks[r].Name = name
		}
	}
	return c, c.Validate()
}
