package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifest checks every bundled file against its recorded SHA-256, that
// the manifest names every embedded file and nothing else, and that the
// README gives the same checksum for each.
func TestManifest(t *testing.T) {
	if err := Verify(); err != nil {
		t.Fatal(err)
	}
	embedded := map[string]bool{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".gz") {
			embedded[strings.TrimSuffix(p, ".gz")] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(embedded) != len(Manifest) {
		t.Fatalf("%d embedded files, %d in the manifest", len(embedded), len(Manifest))
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Manifest {
		if !embedded[f.Name] {
			t.Errorf("%s in the manifest but not embedded", f.Name)
		}
		if !bytes.Contains(readme, []byte(f.SHA256+"  "+f.Name)) {
			t.Errorf("README.md lacks the line %q", f.SHA256+"  "+f.Name)
		}
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := Open("nope.csv")
	if !errors.Is(err, ErrNotBundled) {
		t.Fatalf("err = %v, want ErrNotBundled", err)
	}
	if !strings.Contains(err.Error(), "gavel/simulation_throughputs.json") {
		t.Errorf("error does not list the bundled files: %v", err)
	}
}

func TestOpenPath(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(plain, []byte("x,y\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("x,y\n1,2\n"))
	zw.Close()
	gz := filepath.Join(dir, "a.csv.gz")
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, gz} {
		r, err := OpenPath(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(b) != "x,y\n1,2\n" {
			t.Fatalf("%s: %q, %v", p, b, err)
		}
	}
	bad := filepath.Join(dir, "bad.csv.gz")
	os.WriteFile(bad, []byte("not gzip"), 0o644)
	if _, err := OpenPath(bad); err == nil || !strings.Contains(err.Error(), "bad.csv.gz") {
		t.Fatalf("corrupt gzip: err = %v", err)
	}
	if _, err := OpenPath(filepath.Join(dir, "missing.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
}
