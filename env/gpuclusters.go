package env

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tegrl/tegrl/data"
)

// Real GPU clusters for the round simulator: the servers of a node list
// (openb, the 4,278-node spot cluster) with their GPU models mapped onto
// the throughput table through a GPUModels mapping.

// NodeServer is one server of a node list: its GPU model and GPU count.
type NodeServer struct {
	Model string
	GPUs  int
}

// ServerCluster is a GPU cluster of servers with differing GPU counts:
// Cluster holds the GPU types (its Table is the throughput table extended
// with the mapping's derived types) and capacities, Servers[i] the GPU
// counts of the servers of Cluster.Types[i], largest first (so that gangs
// find whole servers first), in node-list order among equals. Racks group
// Cluster.ServersPerRack consecutive servers, numbered type by type in
// name order.
type ServerCluster struct {
	Name    string
	Cluster *GPUCluster
	Servers [][]int
}

// DefaultServersPerRack is the rack size of the node-list clusters: the
// node lists have no rack field, so 8 servers (64 GPUs of 8-GPU servers,
// a common rack of 4U-6U GPU servers) share a top-of-rack switch.
const DefaultServersPerRack = 8

// NewServerCluster builds a cluster from servers (GPU-less ones skipped),
// each model mapped through gm onto table t. serversPerRack 0 takes
// DefaultServersPerRack.
func NewServerCluster(name string, t *ThroughputTable, gm *GPUModels, servers []NodeServer, serversPerRack int) (*ServerCluster, error) {
	if serversPerRack < 0 {
		return nil, fmt.Errorf("cluster %s: servers per rack must be >= 0, got %d", name, serversPerRack)
	}
	if serversPerRack == 0 {
		serversPerRack = DefaultServersPerRack
	}
	var models []string
	for _, s := range servers {
		if s.GPUs < 0 || s.GPUs > MaxScale*16 {
			return nil, fmt.Errorf("cluster %s: server with %d GPUs", name, s.GPUs)
		}
		if s.GPUs > 0 && !slices.Contains(models, s.Model) {
			models = append(models, s.Model)
		}
	}
	sort.Strings(models)
	tab, err := t.WithGPUModels(gm, models)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	counts, sizes := map[string]int{}, map[string][]int{}
	for _, s := range servers {
		if s.GPUs == 0 {
			continue
		}
		typ, _ := gm.TypeName(s.Model)
		counts[typ] += s.GPUs
		sizes[typ] = append(sizes[typ], s.GPUs)
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("cluster %s: no GPUs", name)
	}
	c, err := NewGPUCluster(tab, counts, 1)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	c.ServersPerRack = serversPerRack
	sc := &ServerCluster{Name: name, Cluster: c, Servers: make([][]int, len(c.Types))}
	for i, g := range c.Types {
		sz := sizes[tab.GPUs[g]]
		slices.SortStableFunc(sz, func(a, b int) int { return b - a })
		sc.Servers[i] = sz
	}
	return sc, nil
}

// readNodeCSV reads (model, GPUs) pairs from a CSV with a header naming
// the model and GPU-count columns.
func readNodeCSV(r io.Reader, modelCol, gpuCol string) ([]NodeServer, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("node list header: %w", err)
	}
	mi, gi := slices.Index(head, modelCol), slices.Index(head, gpuCol)
	if mi < 0 || gi < 0 {
		return nil, fmt.Errorf("node list header %q: want columns %q and %q", head, modelCol, gpuCol)
	}
	var out []NodeServer
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("node list: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(rec[gi]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("node list line %d: GPU count %q is not a non-negative integer", line, rec[gi])
		}
		m := strings.TrimSpace(rec[mi])
		if n > 0 && m == "" {
			return nil, fmt.Errorf("node list line %d: %d GPUs without a model", line, n)
		}
		out = append(out, NodeServer{Model: m, GPUs: n})
	}
	return out, nil
}

func openNodeList(name, modelCol, gpuCol string) ([]NodeServer, error) {
	r, err := data.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s, err := readNodeCSV(r, modelCol, gpuCol)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// OpenbServers reads the openb node list (alibaba-gpu-v2023/nodes.csv).
func OpenbServers() ([]NodeServer, error) {
	return openNodeList("alibaba-gpu-v2023/nodes.csv", "model", "gpu")
}

// SpotServers reads the spot cluster's node list
// (alibaba-gpu-v2026-spot/node_info_df.csv).
func SpotServers() ([]NodeServer, error) {
	return openNodeList("alibaba-gpu-v2026-spot/node_info_df.csv", "gpu_model", "gpu_capacity_num")
}

// SampleServers keeps every k-th server of each model (in node-list
// order, from the first), a smaller cluster with the same model mix and
// server sizes; k <= 1 keeps all.
func SampleServers(servers []NodeServer, k int) []NodeServer {
	if k <= 1 {
		return servers
	}
	seen := map[string]int{}
	var out []NodeServer
	for _, s := range servers {
		if s.GPUs == 0 {
			continue
		}
		if seen[s.Model]%k == 0 {
			out = append(out, s)
		}
		seen[s.Model]++
	}
	return out
}

// NamedServerCluster builds "openb" or "spot" (every k-th server of each
// model with sample k > 1) against table t and mapping gm.
func NamedServerCluster(name string, t *ThroughputTable, gm *GPUModels, sample, serversPerRack int) (*ServerCluster, error) {
	var servers []NodeServer
	var err error
	switch name {
	case "openb":
		servers, err = OpenbServers()
	case "spot":
		servers, err = SpotServers()
	default:
		return nil, fmt.Errorf("unknown node-list cluster %q (known: openb, spot)", name)
	}
	if err != nil {
		return nil, err
	}
	label := name
	if sample > 1 {
		label = fmt.Sprintf("%s/%d", name, sample)
	}
	return NewServerCluster(label, t, gm, SampleServers(servers, sample), serversPerRack)
}

// NewRoundSimServers is NewRoundSim on a cluster of servers with differing
// GPU counts: the simulator's workers are laid out server by server as in
// sc.Servers.
func NewRoundSimServers(sc *ServerCluster, pol AllocationPolicy, src JobSource, cfg RoundConfig) (*RoundSim, error) {
	s, err := NewRoundSim(sc.Cluster, pol, src, cfg)
	if err != nil {
		return nil, err
	}
	s.layoutServers(sc.Servers)
	return s, nil
}

// layoutServers replaces the uniform server layout with servers of the
// given GPU counts per type (worker IDs type by type, server by server).
func (s *RoundSim) layoutServers(sizes [][]int) {
	c := s.c
	s.servers = make([][][]int, s.nt)
	s.cursor = make([][]int, s.nt)
	s.workerSrv, s.workerRack = s.workerSrv[:0], s.workerRack[:0]
	srv := 0
	for i := range s.nt {
		for _, n := range sizes[i] {
			ids := make([]int, n)
			for g := range ids {
				ids[g] = len(s.workerSrv)
				s.workerSrv = append(s.workerSrv, srv)
				rack := 0
				if c.ServersPerRack > 0 {
					rack = srv / c.ServersPerRack
				}
				s.workerRack = append(s.workerRack, rack)
			}
			s.servers[i] = append(s.servers[i], ids)
			srv++
		}
		s.cursor[i] = make([]int, len(s.servers[i]))
	}
	s.workerStmp = make([]int, len(s.workerSrv))
	for i := range s.workerStmp {
		s.workerStmp[i] = -1
	}
}
