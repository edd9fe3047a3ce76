package datasets

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Remote is one file of a public dataset: where its publisher serves it
// and, when the publisher gives one, its SHA-256.
type Remote struct {
	File   string // name in the cache folder
	URL    string
	SHA256 string // published hex SHA-256; "" when none is published
}

// PublicDataset is a public trace that `tegrl dataset fetch` downloads.
type PublicDataset struct {
	Name  string // what fetch calls it
	Title string
	Terms string // the publisher's terms, in short
	Files []Remote
}

// Catalog lists the public traces fetch knows, at their publishers'
// addresses (the alibaba/clusterdata repository's READMEs and download
// scripts, msr-fiddle/philly-traces). None of these publishers gives a
// SHA-256 per file at those addresses, so every file is verified against
// the sum recorded when it was first downloaded (SHA256SUMS in the cache
// folder) and reported "unverified" on that first download.
var Catalog = []PublicDataset{
	{Name: "alibaba-gpu-v2023", Title: "Alibaba cluster-trace-gpu-v2023 (openb: FGD, USENIX ATC 2023)",
		Terms: "Alibaba Cluster Trace Program: research and study use; cite the paper",
		Files: []Remote{
			{File: "openb_node_list_gpu_node.csv", URL: "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-gpu-v2023/csv/openb_node_list_gpu_node.csv"},
			{File: "openb_pod_list_default.csv", URL: "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv"},
		}},
	{Name: "alibaba-gpu-v2020", Title: "Alibaba cluster-trace-gpu-v2020 (PAI: MLaaS in the Wild, USENIX NSDI 2022)",
		Terms: "Alibaba Cluster Trace Program: research and study use; cite the paper",
		Files: []Remote{
			{File: "pai_job_table.tar.gz", URL: "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_job_table.tar.gz"},
			{File: "pai_task_table.tar.gz", URL: "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_task_table.tar.gz"},
			{File: "pai_instance_table.tar.gz", URL: "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_instance_table.tar.gz"},
			{File: "pai_machine_spec.tar.gz", URL: "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_machine_spec.tar.gz"},
			{File: "pai_group_tag_table.tar.gz", URL: "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_group_tag_table.tar.gz"},
		}},
	{Name: "alibaba-gpu-v2026-spot", Title: "Alibaba cluster-trace-v2026-spot-gpu (GFS, ASPLOS 2026)",
		Terms: "Alibaba Cluster Trace Program: research and study use; cite the paper",
		Files: []Remote{
			{File: "node_info_df.csv", URL: "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-v2026-spot-gpu/node_info_df.csv"},
			{File: "job_info_df.csv", URL: "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-v2026-spot-gpu/job_info_df.csv"},
		}},
	{Name: "alibaba-v2018", Title: "Alibaba cluster-trace-v2018 machine and batch task tables (IWQoS 2019)",
		Terms: "Alibaba Cluster Trace Program: research and study use; the README offers these direct links to those who skip its survey",
		Files: []Remote{
			{File: "machine_meta.tar.gz", URL: "http://clusterdata2018pubcn.oss-cn-beijing.aliyuncs.com/machine_meta.tar.gz"},
			{File: "batch_task.tar.gz", URL: "http://clusterdata2018pubcn.oss-cn-beijing.aliyuncs.com/batch_task.tar.gz"},
		}},
	{Name: "philly", Title: "Microsoft Philly trace (Jeon et al., USENIX ATC 2019)",
		Terms: "msr-fiddle/philly-traces: see the repository's licence",
		Files: []Remote{
			{File: "trace-data.tar.gz", URL: "https://github.com/msr-fiddle/philly-traces/raw/master/trace-data.tar.gz"},
		}},
}

// CatalogNames lists the datasets fetch knows.
func CatalogNames() []string {
	out := make([]string, len(Catalog))
	for i, d := range Catalog {
		out[i] = d.Name
	}
	return out
}

// FetchOptions configures Fetch.
type FetchOptions struct {
	// Dir is the cache folder; each dataset goes in Dir/NAME.
	Dir string
	// Client makes the requests (nil: a client without an overall timeout,
	// the stall timeout bounds each read instead).
	Client *http.Client
	// Stall aborts an attempt that receives no byte for this long
	// (default 30 s); the attempt's bytes are kept for the next.
	Stall time.Duration
	// Attempts per file (default 3); each resumes where the last stopped.
	Attempts int
	// Bar, when set, returns a writer that counts the bytes of one file
	// (a progress bar) given its size (-1: unknown) and name.
	Bar func(size int64, name string) io.Writer
	// Catalog replaces the package's Catalog (tests serve their own).
	Catalog []PublicDataset
	Log     *slog.Logger
}

func (o *FetchOptions) fill() {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Stall <= 0 {
		o.Stall = 30 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Catalog == nil {
		o.Catalog = Catalog
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Fetched is the outcome of one file.
type Fetched struct {
	Dataset string `json:"dataset"`
	File    string `json:"file"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	// Check says how the bytes were verified: "published" (the
	// publisher's SHA-256), "recorded" (the sum recorded at the first
	// download), or "unverified" (first download, no sum known; the sum
	// is recorded now).
	Check   string `json:"check"`
	Cached  bool   `json:"cached"`  // already in the cache, nothing downloaded
	Resumed int64  `json:"resumed"` // bytes a previous attempt had left
}

// ErrCorrupt is returned (wrapped) when downloaded bytes do not match
// their SHA-256.
var ErrCorrupt = errors.New("SHA-256 mismatch")

// Fetch downloads the dataset name ("all": every one in the catalog) into
// opt.Dir, resuming partial files (HTTP Range) and verifying each file's
// SHA-256; files already in the cache with the right sum are not
// downloaded again.
func Fetch(ctx context.Context, name string, opt FetchOptions) ([]Fetched, error) {
	opt.fill()
	if opt.Dir == "" {
		return nil, errors.New("fetch: no cache folder")
	}
	var sets []PublicDataset
	for _, d := range opt.Catalog {
		if name == "all" || d.Name == name {
			sets = append(sets, d)
		}
	}
	if len(sets) == 0 {
		names := make([]string, len(opt.Catalog))
		for i, d := range opt.Catalog {
			names[i] = d.Name
		}
		return nil, fmt.Errorf("fetch: unknown dataset %q (have all, %s)", name, strings.Join(names, ", "))
	}
	sums, err := readSums(opt.Dir)
	if err != nil {
		return nil, err
	}
	var out []Fetched
	for _, d := range sets {
		for _, r := range d.Files {
			f, err := fetchFile(ctx, d.Name, r, sums, &opt)
			if err != nil {
				return out, fmt.Errorf("fetch %s/%s: %w", d.Name, r.File, err)
			}
			out = append(out, f)
			if f.Check == "unverified" {
				sums.set(d.Name+"/"+r.File, f.SHA256)
				if err := sums.write(opt.Dir); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

func fetchFile(ctx context.Context, set string, r Remote, sums *sumFile, opt *FetchOptions) (Fetched, error) {
	key := set + "/" + r.File
	final := filepath.Join(opt.Dir, set, r.File)
	f := Fetched{Dataset: set, File: r.File, Path: final}
	want, check := r.SHA256, "published"
	if want == "" {
		want, check = sums.get(key), "recorded"
	}
	if want == "" {
		check = "unverified"
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return f, err
	}
	if st, err := os.Stat(final); err == nil && want != "" {
		sum, err := fileSHA256(final)
		if err == nil && sum == want {
			f.Size, f.SHA256, f.Check, f.Cached = st.Size(), sum, check, true
			return f, nil
		}
		opt.Log.Warn("cached file does not match its SHA-256; downloading again", "file", final)
	}
	part := final + ".part"
	if st, err := os.Stat(part); err == nil {
		f.Resumed = st.Size()
	}
	var err error
	for attempt := 1; attempt <= opt.Attempts; attempt++ {
		if err = download(ctx, r.URL, part, opt); err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, errPermanent) {
			return f, err
		}
		opt.Log.Warn("download interrupted; resuming", "file", r.File, "attempt", attempt, "err", err)
	}
	if err != nil {
		return f, fmt.Errorf("%w (after %d attempts; the partial file %s resumes next time)", err, opt.Attempts, part)
	}
	sum, err := fileSHA256(part)
	if err != nil {
		return f, err
	}
	if want != "" && sum != want {
		os.Remove(part)
		return f, fmt.Errorf("%w: got %s, want %s (%s); the download was removed", ErrCorrupt, sum, want, check)
	}
	if err := os.Rename(part, final); err != nil {
		return f, err
	}
	st, err := os.Stat(final)
	if err != nil {
		return f, err
	}
	f.Size, f.SHA256, f.Check = st.Size(), sum, check
	return f, nil
}

// errPermanent marks errors a retry cannot fix (an HTTP 404, say).
var errPermanent = errors.New("permanent")

// download appends the rest of url's body to part, asking for the bytes
// from part's size on.
func download(ctx context.Context, rawURL, part string, opt *FetchOptions) error {
	var off int64
	if st, err := os.Stat(part); err == nil {
		off = st.Size()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	resp, err := opt.Client.Do(req)
	if err != nil {
		return offline(rawURL, err)
	}
	defer resp.Body.Close()
	total := int64(-1)
	flags := os.O_CREATE | os.O_WRONLY
	switch resp.StatusCode {
	case http.StatusOK: // the whole file: start over
		flags |= os.O_TRUNC
		off = 0
		total = resp.ContentLength
	case http.StatusPartialContent:
		flags |= os.O_APPEND
		if start, size, ok := parseContentRange(resp.Header.Get("Content-Range")); !ok || start != off {
			return fmt.Errorf("server answered range %q to bytes=%d-", resp.Header.Get("Content-Range"), off)
		} else {
			total = size
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// The partial file is already whole (or longer than the file):
		// let the checksum decide; a longer file fails it and is removed.
		if _, size, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && size >= 0 && size != off {
			os.Remove(part)
			return fmt.Errorf("partial file of %d bytes is longer than the %d served; removed", off, size)
		}
		return nil
	default:
		err := fmt.Errorf("%s: HTTP %s", rawURL, resp.Status)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return fmt.Errorf("%w: %v", errPermanent, err)
		}
		return err
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	var sink io.Writer = out
	if opt.Bar != nil {
		bar := opt.Bar(total, filepath.Base(part[:len(part)-len(".part")]))
		if w, ok := bar.(interface{ Add64(int64) error }); ok && off > 0 {
			w.Add64(off)
		}
		sink = io.MultiWriter(out, bar)
	}
	n, cerr := copyWithStall(ctx, cancel, sink, resp.Body, opt.Stall)
	if err := out.Close(); err != nil && cerr == nil {
		cerr = err
	}
	if cerr != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return c
		}
		return fmt.Errorf("after %d bytes: %w", off+n, cerr)
	}
	if total >= 0 && off+n != total {
		return fmt.Errorf("truncated: %d of %d bytes", off+n, total)
	}
	return nil
}

// errStalled is the cause of an attempt cancelled for receiving nothing.
var errStalled = errors.New("stalled")

// copyWithStall copies src to dst, cancelling the request when no byte
// arrives for stall.
func copyWithStall(ctx context.Context, cancel context.CancelCauseFunc, dst io.Writer, src io.Reader, stall time.Duration) (int64, error) {
	t := time.AfterFunc(stall, func() { cancel(fmt.Errorf("%w: no data for %v", errStalled, stall)) })
	defer t.Stop()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			t.Reset(stall)
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
}

// offline turns a failed request into an error that says the host cannot
// be reached.
func offline(rawURL string, err error) error {
	host := rawURL
	if u, perr := url.Parse(rawURL); perr == nil {
		host = u.Host
	}
	var dns *net.DNSError
	var op *net.OpError
	if errors.As(err, &dns) || errors.As(err, &op) {
		return fmt.Errorf("cannot reach %s (offline, or the address is blocked): %w", host, err)
	}
	return fmt.Errorf("request to %s: %w", host, err)
}

// parseContentRange reads "bytes START-END/SIZE" or "bytes */SIZE" (size
// -1 when "*").
func parseContentRange(s string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	size = -1
	if sz != "*" {
		v, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || v < 0 {
			return 0, 0, false
		}
		size = v
	}
	if rng == "*" {
		return 0, size, true
	}
	a, _, found := strings.Cut(rng, "-")
	v, err := strconv.ParseInt(a, 10, 64)
	if !found || err != nil || v < 0 {
		return 0, 0, false
	}
	return v, size, true
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SumsFile is the name, in the cache folder, of the SHA-256 sums recorded
// at first downloads (sha256sum's format: "HEX  DATASET/FILE").
const SumsFile = "SHA256SUMS"

type sumFile struct {
	mu   sync.Mutex
	sums map[string]string
}

func readSums(dir string) (*sumFile, error) {
	s := &sumFile{sums: map[string]string{}}
	f, err := os.Open(filepath.Join(dir, SumsFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != sha256.Size || name == "" {
			return nil, fmt.Errorf("%s:%d: want \"SHA256  DATASET/FILE\"", filepath.Join(dir, SumsFile), line)
		}
		s.sums[name] = sum
	}
	return s, sc.Err()
}

func (s *sumFile) get(k string) string { s.mu.Lock(); defer s.mu.Unlock(); return s.sums[k] }

func (s *sumFile) set(k, v string) { s.mu.Lock(); defer s.mu.Unlock(); s.sums[k] = v }

func (s *sumFile) write(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.sums))
	for k := range s.sums {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(s.sums[k] + "  " + k + "\n")
	}
	tmp := filepath.Join(dir, SumsFile+".tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, SumsFile))
}
