package rl

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
)

// Metadata keys of a policy's safetensors file (and parameter broadcasts).
const (
	metaKind       = "tegrl.kind"
	metaKindPolicy = "policy"
	metaConfig     = "tegrl.policy_config"
	metaSchema     = "tegrl.observation_schema_hash"
	metaFeatures   = "tegrl.features" // CandFeatures,CtxFeatures: the featurizer's layout
)

func featuresTag() string { return fmt.Sprintf("%d,%d", CandFeatures, CtxFeatures) }

// EncodeParams returns the policy's weights as safetensors bytes, with its
// configuration, the observation schema hash and extra in the metadata.
func (p *Policy) EncodeParams(extra map[string]string) ([]byte, error) {
	cfg, err := json.Marshal(p.Cfg)
	if err != nil {
		return nil, fmt.Errorf("policy params: %w", err)
	}
	meta := map[string]string{
		metaKind: metaKindPolicy, metaConfig: string(cfg),
		metaSchema: env.ObservationSchemaHash(), metaFeatures: featuresTag(),
	}
	for k, v := range extra {
		meta[k] = v
	}
	var b bytes.Buffer
	if err := p.ps.WriteSafetensors(&b, meta); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// PolicyMeta reads a policy file's metadata without loading weights: its
// configuration, after checking the kind, the observation schema hash and
// the feature layout against this build.
func PolicyMeta(meta map[string]string) (PolicyConfig, error) {
	var cfg PolicyConfig
	if k := meta[metaKind]; k != metaKindPolicy {
		return cfg, fmt.Errorf("not a tegrl policy (%s = %q)", metaKind, k)
	}
	if h := meta[metaSchema]; h != env.ObservationSchemaHash() {
		return cfg, fmt.Errorf("observation schema hash %q, this build has %q: the policy was trained on another observation layout", h, env.ObservationSchemaHash())
	}
	if f := meta[metaFeatures]; f != featuresTag() {
		return cfg, fmt.Errorf("feature layout %q, this build has %q", f, featuresTag())
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(meta[metaConfig])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("policy config in metadata: %w", err)
	}
	if err := cfg.validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// LoadParams replaces p's weights with those of payload (safetensors bytes
// from EncodeParams) after checking that the metadata matches p's
// configuration. On error p is unchanged.
func (p *Policy) LoadParams(payload []byte) (map[string]string, error) {
	f, err := decodeMeta(payload)
	if err != nil {
		return nil, err
	}
	cfg, err := PolicyMeta(f)
	if err != nil {
		return nil, err
	}
	if cfg != p.Cfg {
		return nil, fmt.Errorf("policy config %+v differs from this policy's %+v", cfg, p.Cfg)
	}
	return p.ps.ReadSafetensors(bytes.NewReader(payload))
}

// LoadPolicy builds a policy from safetensors bytes alone (the
// configuration comes from the metadata).
func LoadPolicy(payload []byte) (*Policy, map[string]string, error) {
	st, err := nn.DecodeSafetensors(payload)
	if err != nil {
		return nil, nil, err
	}
	if st.Metadata == nil {
		return nil, nil, fmt.Errorf("policy file has no metadata")
	}
	cfg, err := PolicyMeta(st.Metadata)
	if err != nil {
		return nil, nil, err
	}
	// The metadata's sizes must match the tensors before a network of
	// that size is built: a file claiming width 4096 over small tensors
	// is refused without allocating it.
	n := 0
	for _, t := range st.Tensors {
		k := 1
		for _, d := range t.Shape {
			k *= d
		}
		n += k
	}
	if want := cfg.paramCount(); n != want {
		return nil, nil, fmt.Errorf("policy file: its tensors hold %d parameters, its config (candidates %d, hidden %d) needs %d", n, cfg.Candidates, cfg.Hidden, want)
	}
	p, err := newPolicy(cfg, 0, false)
	if err != nil {
		return nil, nil, err
	}
	meta, err := p.ps.ReadSafetensors(bytes.NewReader(payload))
	if err != nil {
		return nil, nil, err
	}
	return p, meta, nil
}

// decodeMeta parses payload as safetensors and returns its metadata.
func decodeMeta(payload []byte) (map[string]string, error) {
	f, err := nn.DecodeSafetensors(payload)
	if err != nil {
		return nil, err
	}
	if f.Metadata == nil {
		return nil, fmt.Errorf("policy file has no metadata")
	}
	return f.Metadata, nil
}
