package report

import (
	"bytes"
	"image"
	_ "image/png" // register the PNG decoder for image.Decode
	"regexp"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

func fakeSummaries(t *testing.T) []SaturationSummary {
	t.Helper()
	var out []SaturationSummary
	for _, f := range []struct {
		name string
		base float64
	}{{"random", 70}, {"fgd", 80}} {
		s, err := Summarize([]env.SaturationRun{fakeRun(f.name, 42, f.base, 10), fakeRun(f.name, 43, f.base+2, 14)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestWriteSaturationMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSaturationMarkdown(&b, fakeSummaries(t), "tegrl saturate --seeds 42-43", "sat.png"); err != nil {
		t.Fatal(err)
	}
	want := "# GPU saturation (FGD protocol)\n\n" +
		"Seeds 42-43 (n=2). Values at 130% arrived GPU demand; mean ± sample standard deviation (n-1) over seeds.\n" +
		"Fragmentation is F(M) as % of GPU capacity; the ratio is F(M) as % of idle GPU.\n\n" +
		"| rank | scheduler | GPU alloc % | frag % of capacity | frag ratio % | dropped pods |\n" +
		"|---:|---|---:|---:|---:|---:|\n" +
		"| 1 | fgd | 94.00 ± 1.41 | 162.00 ± 2.83 | 243.00 ± 4.24 | 12.0 |\n" +
		"| 2 | random | 84.00 ± 1.41 | 142.00 ± 2.83 | 213.00 ± 4.24 | 12.0 |\n" +
		"\n![GPU allocation ratio against arrived GPU demand](sat.png)\n" +
		"\nCommand:\n\n```sh\ntegrl saturate --seeds 42-43\n```\n"
	if got := b.String(); got != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	if err := WriteSaturationMarkdown(&b, fakeSummaries(t), "x", ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "![") {
		t.Errorf("markdown without a plot links one:\n%s", b.String())
	}
}

func TestWriteSaturationText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSaturationText(&b, fakeSummaries(t)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"== random  (seeds 42-43, n=2; mean ± sample std)\n",
		"random at 130% arrival: GPU alloc 84.00 ± 1.41 %, frag 142.00 ± 2.83 % of capacity, frag ratio 213.00 ± 4.24 %, dropped 12.0 of 100.0 pods\n",
		"== summary at 130% arrival, sorted by GPU allocation\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// Rows every 10% plus 130%: 0..130 is 14 rows per scheduler.
	if n := strings.Count(out, " 71.00 ± 1.41 "); n != 1 { // random, arrival 0
		t.Errorf("arrival-0 row of random appears %d times:\n%s", n, out)
	}
	rowRE := regexp.MustCompile(`(?m)^ *\d+  +\d+\.\d\d ± \d+\.\d\d  +\d+\.\d\d  +\d+\.\d\d$`)
	if rows := rowRE.FindAllString(out, -1); len(rows) != 2*14 {
		t.Errorf("%d arrival rows, want 28 (every 10%% from 0 to 130, two schedulers):\n%s", len(rows), out)
	}
	// Summary is sorted: fgd ranks first.
	sum := out[strings.Index(out, "== summary"):]
	if strings.Index(sum, "fgd") > strings.Index(sum, "random") {
		t.Errorf("summary not sorted by alloc:\n%s", sum)
	}
}

func TestWriteAllocationPlot(t *testing.T) {
	var b bytes.Buffer
	if err := WriteAllocationPlot(&b, fakeSummaries(t), "test"); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b.Bytes(), []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("output does not start with the PNG signature: % x", b.Bytes()[:min(8, b.Len())])
	}
	img, format, err := image.Decode(&b)
	if err != nil {
		t.Fatalf("decode plot: %v", err)
	}
	if format != "png" || img.Bounds().Dx() < 500 || img.Bounds().Dy() < 300 {
		t.Errorf("plot is %s %v", format, img.Bounds())
	}
}

func TestSaveAllocationPlotBadPath(t *testing.T) {
	err := SaveAllocationPlot(t.TempDir()+"/no/such/dir/p.png", fakeSummaries(t), "x")
	if err == nil || !strings.Contains(err.Error(), "save plot") {
		t.Errorf("error = %v", err)
	}
}
