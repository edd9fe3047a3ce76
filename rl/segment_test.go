package rl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// testSegment collects a real segment from the small environment, with a
// GNN policy's graph rows when encoder is EncoderGNN.
func testSegment(t testing.TB, n int, encoder string) *Segment {
	t.Helper()
	cfg := PolicyConfig{Candidates: 8, Hidden: 8, DampingMax: 2, ReplicaZeroBias: 4, Encoder: encoder}
	p, err := NewPolicy(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := smallEnv(t)
	defer e.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	var seg Segment
	seg.Reset(8, encoder == EncoderGNN)
	d := mustReset(t, e, 1)
	for seg.Len() < n && d.Obs != nil {
		var one Samples
		one.Configure(cfg)
		if !p.Featurize(d, &one) {
			d, _, _ = e.Step(env.Wait)
			continue
		}
		seg.Steps.CopyFrom(&one, 0)
		a, lp, v := p.Sample(&seg.Steps, seg.Len()-1, rng, false)
		var r float64
		var done bool
		d, r, done = e.Step(a)
		seg.LogP, seg.Value, seg.Reward, seg.Done = append(seg.LogP, lp), append(seg.Value, v), append(seg.Reward, float32(r)), append(seg.Done, done)
	}
	var one Samples
	one.Configure(cfg)
	if !p.Featurize(d, &one) {
		t.Fatal("no bootstrap decision")
	}
	seg.Boot.CopyFrom(&one, 0)
	seg.Episodes = append(seg.Episodes, EpisodeResult{Seed: 3, Return: -1.5, Steps: 7, MeanSlowdown: 1.2})
	return &seg
}

// TestSegmentRoundTrip: a segment decodes to what was encoded, the same
// bytes twice; a positive joint log-probability (a peaked Beta density)
// is valid; truncations and corruptions are refused with the format
// errors.
func TestSegmentRoundTrip(t *testing.T) {
	for _, enc := range []string{"", EncoderGNN} {
		t.Run("encoder="+enc, func(t *testing.T) { testSegmentRoundTrip(t, enc) })
	}
}

func testSegmentRoundTrip(t *testing.T, enc string) {
	graph := enc == EncoderGNN
	seg := testSegment(t, 20, enc)
	seg.LogP[3] = 0.7
	b := AppendSegment(nil, seg)
	var got Segment
	if err := DecodeSegment(b, &got, 8, graph); err != nil {
		t.Fatal(err)
	}
	if got.Steps.WithGraph != graph || got.Boot.WithGraph != graph {
		t.Fatalf("graph rows %v, %v, want %v", got.Steps.WithGraph, got.Boot.WithGraph, graph)
	}
	if graph && !slices.Equal(got.Steps.Graph, seg.Steps.Graph) {
		t.Fatal("graph rows differ after the round trip")
	}
	if !graph {
		if err := DecodeSegment(b, &got, 8, true); !errors.Is(err, ErrSegmentFormat) {
			t.Fatalf("a segment without graph rows for a GNN learner: %v", err)
		}
	}
	if !bytes.Equal(AppendSegment(nil, &got), b) {
		t.Fatal("re-encoding differs")
	}
	if got.Len() != 20 || got.LogP[3] != 0.7 || got.Episodes[0] != seg.Episodes[0] || got.Boot.Len() != 1 {
		t.Fatalf("decoded %d steps, logp %v, episodes %+v", got.Len(), got.LogP[3], got.Episodes)
	}
	for i := 0; i < got.Len(); i++ {
		v := int(got.Steps.Valid[i])
		want := seg.Steps.Cand[i*8*CandFeatures : i*8*CandFeatures+v*CandFeatures]
		have := got.Steps.Cand[i*8*CandFeatures : i*8*CandFeatures+v*CandFeatures]
		for k := range want {
			if want[k] != have[k] {
				t.Fatalf("step %d candidate value %d: %v, want %v", i, k, have[k], want[k])
			}
		}
	}
	if err := DecodeSegment(b, &got, 16, graph); !errors.Is(err, ErrSegmentFormat) {
		t.Fatalf("wrong K: %v", err)
	}
	for _, cut := range []int{0, 3, 10, len(b) / 2, len(b) - 1} {
		if err := DecodeSegment(b[:cut], &got, 8, graph); err == nil {
			t.Fatalf("truncated at %d: accepted", cut)
		}
	}
	bad := append([]byte(nil), b...)
	copy(bad[len(bad)-8:], []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}) // a NaN episode result
	if err := DecodeSegment(bad, &got, 8, graph); !errors.Is(err, ErrSegmentFormat) {
		t.Fatalf("NaN accepted: %v", err)
	}
	nan := *seg
	nan.Reward = append([]float32(nil), seg.Reward...)
	nan.Reward[1] = float32(math.Inf(1))
	if err := DecodeSegment(AppendSegment(nil, &nan), &got, 8, graph); !errors.Is(err, ErrSegmentFormat) {
		t.Fatalf("infinite reward accepted: %v", err)
	}
}

// FuzzDecodeSegment: no input makes the decoder panic, and what it accepts
// re-encodes to the same bytes. The candidate count is the learner's (8),
// as in every caller: with any count allowed, a short input may claim 4,096
// padded candidates per step, and the fuzzer spends its time allocating
// (bounded by maxSegFloats, tested below).
func FuzzDecodeSegment(f *testing.F) {
	f.Add(AppendSegment(nil, testSegment(f, 4, "")))
	f.Add(AppendSegment(nil, testSegment(f, 1, EncoderGNN)))
	f.Add([]byte("TGSG"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Segment
		if err := DecodeSegment(b, &s, 8, false); err != nil {
			return
		}
		if !bytes.Equal(AppendSegment(nil, &s), b) {
			t.Fatal("accepted bytes do not re-encode identically")
		}
	})
}

// FuzzLoadPolicy: policy files and parameter broadcasts come from disk and
// the network; no input makes loading panic, and a refused one leaves the
// policy unchanged.
func FuzzLoadPolicy(f *testing.F) {
	p, err := NewPolicy(PolicyConfig{Candidates: 4, Hidden: 4, DampingMax: 2, ReplicaZeroBias: 4}, 1)
	if err != nil {
		f.Fatal(err)
	}
	good, err := p.EncodeParams(map[string]string{metaEnv: `{"machines":8,"load":0.5,"episode_s":60,"reward":"","reward_scale":0,"reward_baseline":"","mtbf_s":0}`, metaActor: `{"seed":1,"segment_len":10}`})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	before, _ := p.EncodeParams(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = LoadPolicy(b)
		_, _ = actorConfigFromParams(b)
		if _, err := p.LoadParams(b); err != nil {
			if after, _ := p.EncodeParams(nil); !bytes.Equal(after, before) {
				t.Fatal("a refused load changed the policy")
			}
		} else {
			before, _ = p.EncodeParams(nil)
		}
	})
}

// TestSegmentDecodedSize: a header whose steps and candidates would decode
// to more than maxSegFloats is refused before anything is allocated.
func TestSegmentDecodedSize(t *testing.T) {
	b := AppendSegment(nil, testSegment(t, 2, ""))
	// K = 4096 and 65,535 steps, with the bytes of the real segment behind.
	binary.LittleEndian.PutUint16(b[6:], 4096)
	binary.LittleEndian.PutUint32(b[8:], 65535)
	b = append(b, make([]byte, 65535*150)...)
	var s Segment
	if err := DecodeSegment(b, &s, 0, false); !errors.Is(err, ErrSegmentFormat) || !strings.Contains(err.Error(), "MB") {
		t.Fatalf("oversized segment: %v", err)
	}
}

// mustReset resets e, failing the test on an error.
func mustReset(tb testing.TB, e *ClusterEnv, seed uint64) Decision {
	tb.Helper()
	d, err := e.Reset(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
