package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simJSON runs simulate with --json and returns its first row and stderr.
func simJSON(t *testing.T, args ...string) (map[string]float64, string) {
	t.Helper()
	out, stderr, err := run(t, append([]string{"simulate", "--json", "--log-level", "warn"}, args...)...)
	if err != nil {
		t.Fatalf("simulate %v: %v\n%s", args, err, stderr)
	}
	m := map[string]any{}
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &m); err != nil {
		t.Fatalf("simulate %v: %v\n%s", args, err, out)
	}
	num := map[string]float64{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			num[k] = f
		}
	}
	return num, stderr
}

// writeTimedTrace writes testNodes and 120 CPU pods, one every 30 s, of
// 150 to 900 s (a cycle of four lengths): short jobs next to the 1,000
// trace seconds a 10 s tick stands for under --compress 100.
func writeTimedTrace(t *testing.T) (nodes, pods string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	lengths := []int{150, 200, 300, 900}
	for k := range 120 {
		c := 5000 + 30*k // the trace starts late: time must start at 5,000 s
		fmt.Fprintf(&b, "p%d,8000,8192,0,0,,BE,Running,%d,%d,%d\n", k, c, c+lengths[k%4], c)
	}
	nodes, pods = filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "pods.csv")
	if err := os.WriteFile(nodes, []byte(testNodes), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pods, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return nodes, pods
}

// TestCompressKeepsTime: at --compress 100 the tick shrinks with the
// trace, so slowdown and JCTs (times 100) are what the uncompressed run
// reports; a 10 s tick (--tick 10 given) would round each short job up to
// a tick, 1,000 trace seconds.
func TestCompressKeepsTime(t *testing.T) {
	nodes, pods := writeTimedTrace(t)
	base := []string{"--scheduler", "bestfit", "--cluster", "alibaba-gpu:" + nodes, "--workload", "alibaba-gpu:" + pods, "--mtbf", "-1"}
	real, _ := simJSON(t, base...)
	comp, _ := simJSON(t, append(base, "--compress", "100")...)
	if real["mean_slowdown"] < 1 || math.Abs(comp["mean_slowdown"]/real["mean_slowdown"]-1) > 0.05 {
		t.Fatalf("slowdown %v at --compress 100, %v uncompressed", comp["mean_slowdown"], real["mean_slowdown"])
	}
	for _, k := range []string{"mean_jct_s", "p95_jct_s"} {
		if math.Abs(100*comp[k]/real[k]-1) > 0.05 {
			t.Fatalf("%s: %v at --compress 100 (x100), %v uncompressed", k, 100*comp[k], real[k])
		}
	}
	if real["p95_jct_s"] < real["mean_jct_s"] || comp["p95_jct_s"] < comp["mean_jct_s"] {
		t.Fatalf("p95 JCT below the mean: %v < %v, %v < %v", real["p95_jct_s"], real["mean_jct_s"], comp["p95_jct_s"], comp["mean_jct_s"])
	}
	// The run covers the trace's active time, from its first pod (5,000 s
	// into the trace), not from 0.
	if real["sim_time_s"] > 120*30+900+60 {
		t.Fatalf("uncompressed run lasted %v simulated s, want the pods' ~4,500", real["sim_time_s"])
	}
	coarse, _ := simJSON(t, append(base, "--compress", "100", "--tick", "10")...)
	if coarse["mean_slowdown"] < 2*real["mean_slowdown"] {
		t.Fatalf("--tick 10 at --compress 100: slowdown %v, expected the tick's artefact (uncompressed %v)", coarse["mean_slowdown"], real["mean_slowdown"])
	}
}

// TestClusterSeedApart: --seed changes the workload, not the synthetic
// cluster; --cluster-seed changes the cluster; every run names it.
func TestClusterSeedApart(t *testing.T) {
	line := func(args ...string) string {
		_, stderr := simJSON(t, append([]string{"--scheduler", "bestfit", "--machines", "96", "--duration", "600"}, args...)...)
		for l := range strings.SplitSeq(stderr, "\n") {
			if strings.HasPrefix(l, "cluster: ") {
				return l
			}
		}
		t.Fatalf("no cluster line in stderr:\n%s", stderr)
		return ""
	}
	one, five := line("--seed", "1"), line("--seed", "5")
	if one != five || !strings.HasPrefix(one, "cluster: 96 machines, ") || !strings.HasSuffix(one, "(synthetic, cluster seed 1)") {
		t.Fatalf("--seed 1 and 5: %q and %q, want one cluster", one, five)
	}
	other := line("--seed", "1", "--cluster-seed", "5")
	if other == one || !strings.HasSuffix(other, "(synthetic, cluster seed 5)") {
		t.Fatalf("--cluster-seed 5: %q (seed 1: %q)", other, one)
	}
}

// TestTraceSpecGrammar: a source alone is the bundled table, SOURCE:FILE a
// file, and a missing file or policy is said to be missing.
func TestTraceSpecGrammar(t *testing.T) {
	m, stderr := simJSON(t, "--scheduler", "fgd", "--cluster", "alibaba-gpu", "--workload", "alibaba-gpu", "--start", "12000000", "--window", "100000")
	if !strings.Contains(stderr, "cluster: 1523 machines, 6212 GPUs (alibaba-gpu, bundled)") || !strings.Contains(stderr, "workload: 306 jobs over 99607 s") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if m["jobs_submitted"] != 306 || m["util_gpu"] <= 0 {
		t.Fatalf("window run: %v submitted, GPU utilisation %v", m["jobs_submitted"], m["util_gpu"])
	}
	missing := filepath.Join(t.TempDir(), "nodes.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--cluster", "alibaba-gpu:" + missing}, missing + ": no such file"},
		{[]string{"simulate", "--workload", "alibaba-batch:" + missing}, missing + ": no such file"},
		{[]string{"simulate", "--scheduler", "runs/nope"}, `scheduler "runs/nope": no such file`},
		{[]string{"saturate", "--nodes", "alibaba-gpu:" + missing}, missing + ": no such file"},
		{[]string{"simulate", "--start", "1h"}, "--start and --window cut trace workloads"},
	} {
		_, _, err := run(t, append(c.args, "--log-level", "warn")...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
