package env

import (
	"fmt"
	"strings"
)

// Gang placement for the round simulator: once a round's mechanism has
// chosen which gangs run on a GPU type, a gang that cannot keep its GPUs
// of the last round takes free GPUs of the type. Which servers it takes
// them from is a GangPlacer's choice. A placer sees only free-GPU counts,
// so it costs O(servers of the type) per gang and, with its buffers
// grown, allocates nothing.

// PlaceRequest is one gang to place on the servers of one GPU type.
type PlaceRequest struct {
	// GPUs is the gang's size.
	GPUs int
	// Typical is the most common gang size among the active jobs (ties to
	// the smaller), the workload fgd keeps servers able to host.
	Typical int
	// Free is the number of free GPUs of each server of the type, in
	// server (worker) order.
	Free []int
	// Rack is each server's rack, numbered from 0 within the type and
	// nondecreasing; Racks is their number.
	Rack  []int
	Racks int
	// OneServer allows only placements on a single server (a gang the
	// policy consolidates).
	OneServer bool
}

// PlaceTake is a placement's share of one server: GPUs of server Server
// (an index into PlaceRequest.Free).
type PlaceTake struct{ Server, GPUs int }

// GangPlacer chooses the servers a gang takes its free GPUs from.
type GangPlacer interface {
	Name() string
	// Place appends to out the servers the gang takes GPUs from, each
	// once, and reports whether it found a placement: the GPUs sum to
	// PlaceRequest.GPUs and none exceeds its server's free GPUs. It returns
	// out unchanged and false when there is none (fewer free GPUs than the
	// gang, or OneServer and no server holds it).
	Place(r *PlaceRequest, out []PlaceTake) ([]PlaceTake, bool)
}

// DefaultGangPlacer is the placement of Gavel's simulator.
const DefaultGangPlacer = "gavel"

var gangPlacers = []struct {
	name string
	make func() GangPlacer
}{
	{"gavel", func() GangPlacer { return gavelPlacer{} }},
	{"bestfit", func() GangPlacer { return &bestFitPlacer{} }},
	{"kube", func() GangPlacer { return &kubePlacer{} }},
	{"fgd", func() GangPlacer { return &fgdPlacer{} }},
}

// GangPlacerNames lists the placers RoundConfig.Placement accepts, the
// default first.
func GangPlacerNames() []string {
	out := make([]string, len(gangPlacers))
	for i, p := range gangPlacers {
		out[i] = p.name
	}
	return out
}

// GangPlacerByName returns a fresh placer ("" is the default), or an error
// naming the known ones.
func GangPlacerByName(name string) (GangPlacer, error) {
	if name == "" {
		name = DefaultGangPlacer
	}
	for _, p := range gangPlacers {
		if p.name == name {
			return p.make(), nil
		}
	}
	return nil, fmt.Errorf("unknown gang placement %q (known: %s)", name, strings.Join(GangPlacerNames(), ", "))
}

// gavelPlacer is Gavel's placement: the first free GPUs in worker order,
// server by server; a consolidated gang takes the first server that holds
// it whole.
type gavelPlacer struct{}

func (gavelPlacer) Name() string { return "gavel" }

func (gavelPlacer) Place(r *PlaceRequest, out []PlaceTake) ([]PlaceTake, bool) {
	if r.OneServer {
		for k, f := range r.Free {
			if f >= r.GPUs {
				return append(out, PlaceTake{k, r.GPUs}), true
			}
		}
		return out, false
	}
	n0, need := len(out), r.GPUs
	for k, f := range r.Free {
		if need == 0 {
			break
		}
		if f > 0 {
			n := min(f, need)
			out = append(out, PlaceTake{k, n})
			need -= n
		}
	}
	if need > 0 {
		return out[:n0], false
	}
	return out, true
}

// bestFitPlacer packs: the gang goes whole to the server with the fewest
// free GPUs that holds it (ties to the first), keeping emptier servers for
// larger gangs. A gang no server holds stays in one rack when a rack
// holds it (the rack with the fewest free GPUs that does) and fills that
// rack's servers with the most free GPUs first, spreading over the fewest
// servers.
type bestFitPlacer struct{ sorter serverSorter }

func (*bestFitPlacer) Name() string { return "bestfit" }

func (p *bestFitPlacer) Place(r *PlaceRequest, out []PlaceTake) ([]PlaceTake, bool) {
	best := -1
	for k, f := range r.Free {
		if f >= r.GPUs && (best < 0 || f < r.Free[best]) {
			best = k
		}
	}
	if best >= 0 {
		return append(out, PlaceTake{best, r.GPUs}), true
	}
	if r.OneServer || sumInts(r.Free) < r.GPUs {
		return out, false
	}
	rack := p.sorter.rackFor(r)
	need := r.GPUs
	for _, k := range p.sorter.order(r.Free, true) {
		if need == 0 {
			break
		}
		if rack >= 0 && r.Rack[k] != rack {
			continue
		}
		n := min(r.Free[k], need)
		out = append(out, PlaceTake{k, n})
		need -= n
	}
	return out, true
}

// kubePlacer is kube-scheduler's default scoring (NodeResourcesFit,
// LeastAllocated) with the gang as one request: the servers with the most
// free GPUs first (ties to the first), so a gang goes whole to the
// emptiest server when it holds it and load spreads over the cluster.
// LeastAllocated scores the free fraction of a server; the count used
// here orders servers the same way where they have equal GPU counts. It
// knows no racks.
type kubePlacer struct{ sorter serverSorter }

func (*kubePlacer) Name() string { return "kube" }

func (p *kubePlacer) Place(r *PlaceRequest, out []PlaceTake) ([]PlaceTake, bool) {
	best := -1
	for k, f := range r.Free {
		if best < 0 || f > r.Free[best] {
			best = k
		}
	}
	if best >= 0 && r.Free[best] >= r.GPUs {
		return append(out, PlaceTake{best, r.GPUs}), true
	}
	if r.OneServer || sumInts(r.Free) < r.GPUs {
		return out, false
	}
	need := r.GPUs
	for _, k := range p.sorter.order(r.Free, true) {
		if need == 0 {
			break
		}
		n := min(r.Free[k], need)
		out = append(out, PlaceTake{k, n})
		need -= n
	}
	return out, true
}

// fgdPlacer is fragmentation gradient descent (Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
// Gradient Descent", USENIX ATC 2023) reduced to whole GPUs and one
// typical gang size D (PlaceRequest.Typical) in place of the paper's
// workload distribution: a server with f free GPUs strands F(f) = f of
// them when f < D (it can no longer host a typical gang) and none
// otherwise, and the gang takes the placement that least increases the
// sum of F. On one server that is the server minimising
// F(f-GPUs) - F(f) (ties to the fewest free GPUs, then the first). A gang
// no server holds stays in one rack when a rack holds it (as bestfit),
// empties whole servers from the fewest free GPUs up (each removes its
// stranded GPUs) and takes the rest from the remaining server whose
// leftover strands the least: a greedy descent, not an exact search.
type fgdPlacer struct{ sorter serverSorter }

func (*fgdPlacer) Name() string { return "fgd" }

func stranded(f, typical int) int {
	if f < typical {
		return f
	}
	return 0
}

func (p *fgdPlacer) Place(r *PlaceRequest, out []PlaceTake) ([]PlaceTake, bool) {
	d := r.Typical
	best, bestDelta := -1, 0
	for k, f := range r.Free {
		if f < r.GPUs {
			continue
		}
		delta := stranded(f-r.GPUs, d) - stranded(f, d)
		if best < 0 || delta < bestDelta || (delta == bestDelta && f < r.Free[best]) {
			best, bestDelta = k, delta
		}
	}
	if best >= 0 {
		return append(out, PlaceTake{best, r.GPUs}), true
	}
	if r.OneServer || sumInts(r.Free) < r.GPUs {
		return out, false
	}
	rack := p.sorter.rackFor(r)
	need := r.GPUs
	order := p.sorter.order(r.Free, false)
	i := 0
	for ; i < len(order) && need > 0; i++ {
		k := order[i]
		if rack >= 0 && r.Rack[k] != rack {
			continue
		}
		if r.Free[k] > need {
			break
		}
		out = append(out, PlaceTake{k, r.Free[k]})
		need -= r.Free[k]
	}
	if need == 0 {
		return out, true
	}
	last, lastDelta := -1, 0
	for ; i < len(order); i++ {
		k := order[i]
		if rack >= 0 && r.Rack[k] != rack {
			continue
		}
		f := r.Free[k]
		delta := stranded(f-need, d) - stranded(f, d)
		if last < 0 || delta < lastDelta {
			last, lastDelta = k, delta
		}
	}
	return append(out, PlaceTake{last, need}), true
}

// serverSorter holds the buffers of the placers' O(servers) orderings.
type serverSorter struct {
	count, idx, rackFree []int
}

// order returns the indices of the servers with free GPUs by free count,
// most first when desc, ties in server order (a counting sort).
func (s *serverSorter) order(free []int, desc bool) []int {
	hi := 0
	for _, f := range free {
		hi = max(hi, f)
	}
	s.count = growInts(s.count, hi+2)
	clear(s.count)
	key := func(f int) int {
		if desc {
			return hi - f
		}
		return f
	}
	n := 0
	for _, f := range free {
		if f > 0 {
			s.count[key(f)+1]++
			n++
		}
	}
	for v := 1; v < len(s.count); v++ {
		s.count[v] += s.count[v-1]
	}
	s.idx = growInts(s.idx, n)
	for k, f := range free {
		if f > 0 {
			c := &s.count[key(f)]
			s.idx[*c] = k
			*c++
		}
	}
	return s.idx
}

// rackFor is the rack with the fewest free GPUs that still holds the gang
// (ties to the first), or -1 when no rack does.
func (s *serverSorter) rackFor(r *PlaceRequest) int {
	s.rackFree = growInts(s.rackFree, r.Racks)
	clear(s.rackFree)
	for k, f := range r.Free {
		s.rackFree[r.Rack[k]] += f
	}
	best := -1
	for k, f := range s.rackFree {
		if f >= r.GPUs && (best < 0 || f < s.rackFree[best]) {
			best = k
		}
	}
	return best
}

func growInts(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n, 2*n)
	}
	return b[:n]
}

func sumInts(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}
