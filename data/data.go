// Package data holds the public datasets that tegrl's demo, tests and
// default experiments run on, embedded in the binary so that a clone (or a
// `go install`ed binary) needs nothing outside the repository.
//
// Each file is stored gzip-compressed under its directory (for example
// alibaba-gpu-v2023/nodes.csv.gz) and opened by its uncompressed name
// (alibaba-gpu-v2023/nodes.csv). README.md beside this file gives every
// file's source, terms, citation and SHA-256 of the uncompressed bytes;
// Manifest holds the same checksums and TestManifest checks both.
//
// The full public traces are larger than what is bundled; they are the
// user's to download (`tegrl dataset fetch`).
package data

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
)

//go:embed alibaba-gpu-v2023 alibaba-gpu-v2026-spot alibaba-v2018 alibaba-v2018-batch gavel
var files embed.FS

// File describes one bundled file.
type File struct {
	Name   string // uncompressed name, e.g. "gavel/simulation_throughputs.json"
	SHA256 string // hex SHA-256 of the uncompressed bytes
	Source string // where the bytes come from
}

// Manifest lists every bundled data file with the SHA-256 of its
// uncompressed content, in name order.
var Manifest = []File{
	{"alibaba-gpu-v2023/nodes.csv", "5a85c2af79c66a1efff8bbcbda430400aae56d8431370d738480967e1a9c6b15", "alibaba/clusterdata cluster-trace-gpu-v2023 (openb_node_list_gpu_node.csv)"},
	{"alibaba-gpu-v2023/pods.csv", "d20b8c31ed3f1ce55d7ce627cdcb86c00b29106e8003f715c51d9ede5109bbf6", "alibaba/clusterdata cluster-trace-gpu-v2023 (openb_pod_list_default.csv, first 70% by creation_time)"},
	{"alibaba-gpu-v2026-spot/node_info_df.csv", "1aba161961a5a4a1a61aa581383c5e5abe3400b59f8597ba8c4eef7597bc9d18", "alibaba/clusterdata cluster-trace-v2026-spot-gpu (node_info_df.csv)"},
	{"alibaba-v2018-batch/jobs.csv", "b422d8aa185fe5025b139d6843d6d49b91fab486c487df4d606aa52fffba4a2b", "alibaba/clusterdata cluster-trace-v2018 batch tables, as shipped by CloudSimPy (jobs.csv)"},
	{"alibaba-v2018/machine_meta.csv", "3ccd30a264d32ccc4f2a58dfc23a9055db8992a40dac63d80f49f0a41daaf31d", "alibaba/clusterdata cluster-trace-v2018 (machine_meta.csv)"},
	{"alibaba-v2018/machine_usage.csv", "a51d7fcc009e11bbdbc1060c4ae3ed176447fd369be4ec404f4d36d08c64f775", "alibaba/clusterdata cluster-trace-v2018 (machine_usage.csv, first 100,002 rows)"},
	{"gavel/philly_job_distribution.csv", "a233b9e4ffb267279b1d6e3f5b1b00cd0b4211299c04d21eb88e44a25c5cb12c", "stanford-futuredata/gavel (MIT), traces/philly_job_distribution.csv"},
	{"gavel/simulation_throughputs.json", "17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381", "stanford-futuredata/gavel (MIT), simulation_throughputs.json"},
}

// ErrNotBundled is returned (wrapped) for a name that is not bundled.
var ErrNotBundled = errors.New("not a bundled data file")

// Open opens the bundled file name (its uncompressed name, as in Manifest)
// and returns a reader of its uncompressed bytes.
func Open(name string) (io.ReadCloser, error) {
	name = strings.TrimPrefix(name, "/")
	raw, err := files.ReadFile(name + ".gz")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("data: %q: %w (bundled: %s)", name, ErrNotBundled, strings.Join(Names(), ", "))
		}
		return nil, fmt.Errorf("data: %q: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("data: %q: %w", name, err)
	}
	return zr, nil
}

// ReadFile returns the uncompressed bytes of the bundled file name.
func ReadFile(name string) ([]byte, error) {
	r, err := Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("data: %q: %w", name, err)
	}
	return b, nil
}

// Names lists the bundled files' uncompressed names, sorted.
func Names() []string {
	out := make([]string, len(Manifest))
	for i, f := range Manifest {
		out[i] = f.Name
	}
	sort.Strings(out)
	return out
}

// Verify checks that every bundled file decompresses to the bytes whose
// SHA-256 Manifest records.
func Verify() error {
	for _, f := range Manifest {
		b, err := ReadFile(f.Name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
			return fmt.Errorf("data: %s: SHA-256 %s, manifest says %s", f.Name, got, f.SHA256)
		}
	}
	return nil
}

// OpenPath opens a file on disk and returns a reader of its content,
// decompressing it when its name ends in ".gz", so that every trace reader
// takes plain and gzip-compressed files alike.
func OpenPath(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gzipFile{zr, f}, nil
}

// gzipFile closes both the decompressor and the file under it.
type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error {
	err := g.Reader.Close()
	if cerr := g.f.Close(); err == nil {
		err = cerr
	}
	return err
}
