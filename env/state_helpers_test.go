package env

// Whole-column views of State's per-machine records, for tests that state
// expectations over all machines at once.

func prios(s *State) []int32 {
	out := make([]int32, len(s.M))
	for i := range s.M {
		out[i] = s.M[i].Prio
	}
	return out
}

func setPrios(s *State, p []int32) {
	for i := range p {
		s.M[i].Prio = p[i]
	}
}

func vers(s *State) []uint32 {
	out := make([]uint32, len(s.M))
	for i := range s.M {
		out[i] = s.M[i].Ver
	}
	return out
}

// machinesNoVer copies the records with Ver cleared (Ver moves on every
// change; snapshots compare everything else).
func machinesNoVer(s *State) []MachineState {
	out := make([]MachineState, len(s.M))
	copy(out, s.M)
	for i := range out {
		out[i].Ver = 0
	}
	return out
}
