package env

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// GPU models outside the throughput table. Real clusters have GPU models
// Gavel did not measure (openb: T4, A10, V100 32 GB, anonymised G1-G3; the
// spot cluster: A100, A800, H800, A10, two anonymised series). A GPUModels
// mapping gives each a training speed relative to a GPU type of the table
// (its base); WithGPUModels adds the derived types to a table, every
// throughput of the base scaled by the speed. The bundled mapping
// (gpumodels.json) cites its sources; a user replaces it with a file of
// the same format.

//go:embed gpumodels.json
var bundledGPUModels []byte

// GPUModel is one GPU model's entry in a GPUModels mapping.
type GPUModel struct {
	Base  string  `json:"base"`  // a GPU type of the throughput table
	Speed float64 `json:"speed"` // throughput relative to Base, in (0, 100]
	// Alias: the model is the base type itself (Speed must be 1); its
	// GPUs join the base type instead of forming a derived type.
	Alias  bool   `json:"alias,omitempty"`
	Source string `json:"source"` // where the speed comes from
}

// GPUModels maps GPU model names (as the node lists spell them) to speeds.
type GPUModels struct {
	About  string              `json:"about,omitempty"`
	Models map[string]GPUModel `json:"models"`
}

// maxGPUModelSpeed bounds a speed: no GPU is 100 times a table type.
const maxGPUModelSpeed = 100

// BundledGPUModels is the mapping shipped with tegrl (env/gpumodels.json).
func BundledGPUModels() *GPUModels {
	m, err := LoadGPUModels(bytes.NewReader(bundledGPUModels))
	if err != nil {
		panic("env: bundled gpumodels.json: " + err.Error()) // caught by the tests
	}
	return m
}

// LoadGPUModels parses a mapping: a JSON object with a "models" object of
// name -> {"base", "speed", "alias", "source"}. Unknown fields, empty
// names or bases, speeds outside (0, 100] and aliases with a speed other
// than 1 are errors.
func LoadGPUModels(r io.Reader) (*GPUModels, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var m GPUModels
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("gpu models: %w", err)
	}
	if dec.More() {
		return nil, errors.New("gpu models: trailing data after the JSON object")
	}
	if len(m.Models) == 0 {
		return nil, errors.New("gpu models: no \"models\"")
	}
	for name, g := range m.Models {
		switch {
		case strings.TrimSpace(name) == "":
			return nil, errors.New("gpu models: empty model name")
		case strings.TrimSpace(g.Base) == "":
			return nil, fmt.Errorf("gpu models: %q: empty base type", name)
		case !(g.Speed > 0) || g.Speed > maxGPUModelSpeed || math.IsInf(g.Speed, 0):
			return nil, fmt.Errorf("gpu models: %q: speed %v must be in (0, %d]", name, g.Speed, maxGPUModelSpeed)
		case g.Alias && g.Speed != 1:
			return nil, fmt.Errorf("gpu models: %q: an alias of %s must have speed 1, got %v", name, g.Base, g.Speed)
		}
	}
	return &m, nil
}

// TypeName is the throughput-table type a model's GPUs count as: the base
// for an alias, else the model's name in lower case.
func (m *GPUModels) TypeName(model string) (string, error) {
	g, ok := m.Models[model]
	if !ok {
		known := make([]string, 0, len(m.Models))
		for n := range m.Models {
			known = append(known, n)
		}
		sort.Strings(known)
		return "", fmt.Errorf("%w %q (the GPU model mapping has %s)", ErrUnknownGPU, model, strings.Join(known, ", "))
	}
	if g.Alias {
		return g.Base, nil
	}
	return strings.ToLower(model), nil
}

// WithGPUModels returns a copy of t with a derived GPU type for every
// non-alias model in models: throughputs (alone, spread and pair) are the
// base type's times the speed. Models are checked against the mapping
// (ErrUnknownGPU) and bases against the table.
func (t *ThroughputTable) WithGPUModels(gm *GPUModels, models []string) (*ThroughputTable, error) {
	type derived struct {
		name  string
		base  int
		speed float64
	}
	var add []derived
	seen := map[string]bool{}
	for _, model := range models {
		name, err := gm.TypeName(model)
		if err != nil {
			return nil, err
		}
		g := gm.Models[model]
		base, err := t.GPU(g.Base)
		if err != nil {
			return nil, fmt.Errorf("gpu model %q base: %w", model, err)
		}
		if g.Alias || seen[name] {
			continue
		}
		if _, err := t.GPU(name); err == nil {
			return nil, fmt.Errorf("gpu model %q: derived type %q is already in the throughput table", model, name)
		}
		seen[name] = true
		add = append(add, derived{name, base, g.Speed})
	}
	out := &ThroughputTable{Models: t.Models, Scales: t.Scales, GPUs: slices.Clone(t.GPUs)}
	for _, d := range add {
		out.GPUs = append(out.GPUs, d.name)
	}
	sort.Strings(out.GPUs)
	// src[g] is the old column of new type g and mul[g] its factor.
	src, mul := make([]int, len(out.GPUs)), make([]float64, len(out.GPUs))
	for g, n := range out.GPUs {
		if old, err := t.GPU(n); err == nil {
			src[g], mul[g] = old, 1
			continue
		}
		for _, d := range add {
			if d.name == n {
				src[g], mul[g] = d.base, d.speed
			}
		}
	}
	nm, ns, ng := len(t.Models), len(t.Scales), len(out.GPUs)
	if err := checkTableSize(nm, ns, ng); err != nil {
		return nil, err
	}
	out.alone = make([]float64, nm*ns*ng*2)
	out.pair = make([]float64, ng*ns*nm*nm*2)
	for m := range nm {
		for s := range ns {
			for g := range ng {
				for k := range 2 {
					out.alone[((m*ns+s)*ng+g)*2+k] = mul[g] * t.alone[((m*ns+s)*len(t.GPUs)+src[g])*2+k]
				}
			}
		}
	}
	for g := range ng {
		for s := range ns {
			for a := range nm {
				for b := range nm {
					for k := range 2 {
						out.pair[(((g*ns+s)*nm+a)*nm+b)*2+k] = mul[g] * t.pair[(((src[g]*ns+s)*nm+a)*nm+b)*2+k]
					}
				}
			}
		}
	}
	return out, nil
}
