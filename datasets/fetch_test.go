package datasets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fetchServer serves body at /f on 127.0.0.1, with Range support, and
// lets a test break the first responses.
type fetchServer struct {
	*httptest.Server
	body   []byte
	mu     sync.Mutex
	ranges []string // Range headers received
	// breakN breaks the first breakN responses the way mode says:
	// "truncate" (half the bytes, then the connection closes), "stall"
	// (half, then silence), "corrupt" (other bytes).
	mode   string
	breakN atomic.Int32
}

func newFetchServer(t *testing.T, body []byte) *fetchServer {
	s := &fetchServer{body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		s.mu.Unlock()
		if s.breakN.Add(-1) >= 0 {
			switch s.mode {
			case "truncate":
				w.Header().Set("Content-Length", "1000000")
				w.WriteHeader(http.StatusOK)
				w.Write(s.body[:len(s.body)/2])
				return // the server closes a response shorter than its length
			case "stall":
				w.Header().Set("Content-Length", "1000000")
				w.WriteHeader(http.StatusOK)
				w.Write(s.body[:len(s.body)/2])
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
				return
			case "corrupt":
				bad := bytes.Clone(s.body)
				bad[10] ^= 1
				http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(bad))
				return
			}
		}
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(s.body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fetchServer) catalog(sum string) []PublicDataset {
	return []PublicDataset{{Name: "test", Files: []Remote{{File: "f.csv", URL: s.URL + "/f", SHA256: sum}}}}
}

func testBody() []byte {
	b := make([]byte, 1000000)
	for i := range b {
		b[i] = byte(i*7 + i/1000)
	}
	return b
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fetchOpts(dir string, cat []PublicDataset) FetchOptions {
	return FetchOptions{Dir: dir, Catalog: cat, Stall: 300 * time.Millisecond, Attempts: 3}
}

// TestFetchVerifiesAndCaches: a file with a published sum is verified
// ("published"), a second fetch finds it in the cache, and a file without
// one is "unverified" at first and "recorded" after.
func TestFetchVerifiesAndCaches(t *testing.T) {
	body := testBody()
	s := newFetchServer(t, body)
	dir := t.TempDir()
	got, err := Fetch(context.Background(), "test", fetchOpts(dir, s.catalog(sumOf(body))))
	if err != nil || len(got) != 1 || got[0].Check != "published" || got[0].Size != int64(len(body)) || got[0].Cached {
		t.Fatalf("fetch: %+v, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "test", "f.csv")); !bytes.Equal(b, body) {
		t.Fatal("downloaded bytes differ")
	}
	again, err := Fetch(context.Background(), "all", fetchOpts(dir, s.catalog(sumOf(body))))
	if err != nil || !again[0].Cached || len(s.ranges) != 1 {
		t.Fatalf("second fetch: %+v, %v, %d requests", again, err, len(s.ranges))
	}
	dir2 := t.TempDir()
	first, err := Fetch(context.Background(), "test", fetchOpts(dir2, s.catalog("")))
	if err != nil || first[0].Check != "unverified" || first[0].SHA256 != sumOf(body) {
		t.Fatalf("unpublished sum: %+v, %v", first, err)
	}
	sums, _ := os.ReadFile(filepath.Join(dir2, SumsFile))
	if string(sums) != sumOf(body)+"  test/f.csv\n" {
		t.Fatalf("SHA256SUMS = %q", sums)
	}
	second, err := Fetch(context.Background(), "test", fetchOpts(dir2, s.catalog("")))
	if err != nil || second[0].Check != "recorded" || !second[0].Cached {
		t.Fatalf("recorded sum: %+v, %v", second, err)
	}
	if _, err := Fetch(context.Background(), "nope", fetchOpts(dir, s.catalog(""))); err == nil || !strings.Contains(err.Error(), `unknown dataset "nope" (have all, test)`) {
		t.Fatalf("unknown dataset: %v", err)
	}
}

// TestFetchTruncatedResumes: a response cut at half its length is retried
// from the half (Range: bytes=500000-), and the result verifies.
func TestFetchTruncatedResumes(t *testing.T) {
	body := testBody()
	s := newFetchServer(t, body)
	s.mode = "truncate"
	s.breakN.Store(1)
	got, err := Fetch(context.Background(), "test", fetchOpts(t.TempDir(), s.catalog(sumOf(body))))
	if err != nil || got[0].SHA256 != sumOf(body) {
		t.Fatalf("fetch: %+v, %v", got, err)
	}
	if len(s.ranges) != 2 || s.ranges[0] != "" || s.ranges[1] != "bytes=500000-" {
		t.Fatalf("requests' ranges %q, want [\"\" bytes=500000-]", s.ranges)
	}
}

// TestFetchStallResumes: a server that goes silent mid-file is abandoned
// after the stall timeout and the next attempt resumes.
func TestFetchStallResumes(t *testing.T) {
	body := testBody()
	s := newFetchServer(t, body)
	s.mode = "stall"
	s.breakN.Store(1)
	start := time.Now()
	got, err := Fetch(context.Background(), "test", fetchOpts(t.TempDir(), s.catalog(sumOf(body))))
	if err != nil || got[0].SHA256 != sumOf(body) {
		t.Fatalf("fetch: %+v, %v", got, err)
	}
	if len(s.ranges) != 2 || s.ranges[1] != "bytes=500000-" || time.Since(start) > 4*time.Second {
		t.Fatalf("ranges %q after %v", s.ranges, time.Since(start))
	}
	// A server that stalls every attempt fails with the stall named and
	// leaves the partial file.
	s.breakN.Store(10)
	dir := t.TempDir()
	_, err = Fetch(context.Background(), "test", fetchOpts(dir, s.catalog(sumOf(body))))
	if err == nil || !errors.Is(err, errStalled) || !strings.Contains(err.Error(), "resumes next time") {
		t.Fatalf("stalling server: %v", err)
	}
}

// TestFetchCorrupt: bytes that do not match the published SHA-256 fail
// with ErrCorrupt and are removed.
func TestFetchCorrupt(t *testing.T) {
	body := testBody()
	s := newFetchServer(t, body)
	s.mode = "corrupt"
	s.breakN.Store(1)
	dir := t.TempDir()
	_, err := Fetch(context.Background(), "test", fetchOpts(dir, s.catalog(sumOf(body))))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt download: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "test", "f.csv.part")); !os.IsNotExist(err) {
		t.Fatalf("corrupt partial file kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "test", "f.csv")); !os.IsNotExist(err) {
		t.Fatalf("corrupt file installed: %v", err)
	}
	// The next fetch downloads clean bytes.
	if got, err := Fetch(context.Background(), "test", fetchOpts(dir, s.catalog(sumOf(body)))); err != nil || got[0].Resumed != 0 {
		t.Fatalf("refetch: %+v %v", got, err)
	}
}

// TestFetchInterruptedResumes: a fetch cancelled mid-file keeps its bytes,
// and the next run asks only for the rest.
func TestFetchInterruptedResumes(t *testing.T) {
	body := testBody()
	s := newFetchServer(t, body)
	s.mode = "stall"
	s.breakN.Store(1)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	opt := fetchOpts(dir, s.catalog(sumOf(body)))
	opt.Stall = time.Minute
	opt.Bar = func(size int64, name string) io.Writer {
		return writerFunc(func(p []byte) (int, error) {
			cancel() // the user's Ctrl-C, once bytes flow
			return len(p), nil
		})
	}
	if _, err := Fetch(ctx, "test", opt); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fetch: %v", err)
	}
	st, err := os.Stat(filepath.Join(dir, "test", "f.csv.part"))
	if err != nil || st.Size() == 0 || st.Size() > int64(len(body)/2) {
		t.Fatalf("partial file after cancel: %v", err)
	}
	opt.Bar = nil
	got, err := Fetch(context.Background(), "test", opt)
	if err != nil || got[0].Resumed != st.Size() || got[0].SHA256 != sumOf(body) {
		t.Fatalf("resume: %+v, %v", got, err)
	}
	if last := s.ranges[len(s.ranges)-1]; last != "bytes="+itoa(st.Size())+"-" {
		t.Fatalf("resume asked %q, want bytes=%d-", last, st.Size())
	}
}

// TestFetchOffline: an address nothing listens on is reported as
// unreachable, without retrying for long.
func TestFetchOffline(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	addr := s.URL
	s.Close() // nothing listens there now
	cat := []PublicDataset{{Name: "test", Files: []Remote{{File: "f", URL: addr + "/f"}}}}
	_, err := Fetch(context.Background(), "test", fetchOpts(t.TempDir(), cat))
	if err == nil || !strings.Contains(err.Error(), "cannot reach 127.0.0.1:") || !strings.Contains(err.Error(), "offline") {
		t.Fatalf("offline: %v", err)
	}
	s404 := httptest.NewServer(http.NotFoundHandler())
	defer s404.Close()
	cat = []PublicDataset{{Name: "test", Files: []Remote{{File: "f", URL: s404.URL + "/f"}}}}
	_, err = Fetch(context.Background(), "test", fetchOpts(t.TempDir(), cat))
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("404: %v", err)
	}
}

// TestCatalogAddresses: every catalogued file is served over HTTP(S) from
// its publisher's host, under a unique name.
func TestCatalogAddresses(t *testing.T) {
	hosts := []string{"raw.githubusercontent.com/alibaba/clusterdata/", "aliopentrace.oss-cn-beijing.aliyuncs.com/", "clusterdata2018pubcn.oss-cn-beijing.aliyuncs.com/", "github.com/msr-fiddle/philly-traces/"}
	seen := map[string]bool{}
	for _, d := range Catalog {
		for _, f := range d.Files {
			ok := false
			for _, h := range hosts {
				ok = ok || strings.HasPrefix(f.URL, "https://"+h) || strings.HasPrefix(f.URL, "http://"+h)
			}
			if !ok || seen[d.Name+"/"+f.File] || !strings.HasSuffix(f.URL, "/"+f.File) {
				t.Errorf("%s: %s at %s", d.Name, f.File, f.URL)
			}
			seen[d.Name+"/"+f.File] = true
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
