package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tegrl/tegrl/datasets"
)

// TestRecordSIGTERM runs `tegrl dataset record` in a child process (this
// test binary, re-run as the command under main's signal handling), sends
// it SIGTERM once its transitions are being written, and opens the file:
// the child exits promptly, and transitions.arrow is a valid file whose
// rows are numbered from 0 without a gap.
func TestRecordSIGTERM(t *testing.T) {
	if dir := os.Getenv("TEGRL_RECORD_CHILD"); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := execute(ctx, []string{"dataset", "record", "--machines", "60", "--duration", "240h", "--batch-rows", "8",
			"--out", dir, "--log-level", "warn"}, os.Stdout, os.Stderr)
		stop()
		fmt.Fprintln(os.Stderr, "tegrl:", err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(3)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecordSIGTERM$")
	cmd.Env = append(os.Environ(), "TEGRL_RECORD_CHILD="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, datasets.TransitionsFile+".partial")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, err := os.Stat(part); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the child wrote no transitions in 60 s\n%s", stderr.String())
		}
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the child ignored SIGTERM for 30 s\n%s", stderr.String())
	}
	t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("child: %v, want exit status 130\n%s", err, stderr.String())
	}
	r, err := datasets.OpenTransitions(filepath.Join(dir, datasets.TransitionsFile), datasets.ReaderOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer r.Close()
	var n int64
	for r.Next() {
		for i := range r.Batch() {
			if s := r.Batch()[i].Step; s != n {
				t.Fatalf("row %d has step %d", n, s)
			}
			n++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("%d rows: the child was stopped while writing", n)
	}
	if !strings.Contains(stderr.String(), "whole transitions") {
		t.Fatalf("no stop message:\n%s", stderr.String())
	}
}
