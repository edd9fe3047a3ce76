package flagtag

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type inner struct {
	Beta float64 `flag:"beta" default:"0.5" usage:"temperature"`
}

type opts struct {
	inner
	Named  inner2
	Out    string        `flag:"out" usage:"output directory"`
	Steps  int           `flag:"steps" default:"1_000" usage:"steps"`
	Seed   uint64        `flag:"seed" default:"7"`
	On     bool          `flag:"on" default:"true"`
	Wait   time.Duration `flag:"wait" default:"2s"`
	Big    int64         `flag:"big" default:"0x10"`
	Small  float32       `flag:"small" default:"1.5"`
	I32    int32         `flag:"i32" default:"-3"`
	U32    uint32        `flag:"u32" default:"3"`
	List   []string      `flag:"list" default:"a,b"`
	Kept   int           `flag:"kept"`
	hidden int
}

type inner2 struct {
	Gamma float64 `flag:"gamma" usage:"discount"`
}

func TestBindDefaultsAndParse(t *testing.T) {
	o := opts{Kept: 9, Named: inner2{Gamma: 0.99}}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	Bind(fs, &o)
	want := opts{inner: inner{Beta: 0.5}, Named: inner2{Gamma: 0.99}, Steps: 1000, Seed: 7, On: true, Wait: 2 * time.Second,
		Big: 16, Small: 1.5, I32: -3, U32: 3, List: []string{"a", "b"}, Kept: 9}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("defaults: got %+v, want %+v", o, want)
	}
	if got := fs.Lookup("out").Usage; got != "output directory" {
		t.Errorf("usage %q", got)
	}
	if fs.Lookup("kept").DefValue != "9" || fs.Lookup("gamma").DefValue != "0.99" {
		t.Errorf("current values are not the defaults: %q %q", fs.Lookup("kept").DefValue, fs.Lookup("gamma").DefValue)
	}
	err := fs.Parse([]string{"--out", "d", "--steps=5", "--beta", "2", "--gamma", "0.9", "--on=false", "--wait", "1m", "--list", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Out != "d" || o.Steps != 5 || o.Beta != 2 || o.Named.Gamma != 0.9 || o.On || o.Wait != time.Minute || !reflect.DeepEqual(o.List, []string{"x"}) {
		t.Fatalf("parsed: %+v", o)
	}
	if !fs.Changed("steps") || fs.Changed("seed") {
		t.Error("Changed must report only the given flags")
	}
	if err := fs.Parse([]string{"--steps", "many"}); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Errorf("bad value: %v", err)
	}
}

func TestBindPanicsOnProgrammingErrors(t *testing.T) {
	for name, v := range map[string]any{
		"not a pointer": opts{},
		"bad default": &struct {
			N int `flag:"n" default:"x"`
		}{},
		"unsupported kind": &struct {
			M map[string]int `flag:"m"`
		}{},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			Bind(pflag.NewFlagSet("x", pflag.ContinueOnError), v)
		}()
	}
}
