package report

import (
	"slices"
	"strings"
	"testing"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []uint64
	}{
		{"7", []uint64{7}},
		{"0", []uint64{0}},
		{"42-51", []uint64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}},
		{"42,43,50", []uint64{42, 43, 50}},
		{"50, 42 ,43", []uint64{42, 43, 50}},
		{"1-3,10", []uint64{1, 2, 3, 10}},
		{"5-5", []uint64{5}},
		{"18446744073709551615", []uint64{18446744073709551615}},
		{"18446744073709551614-18446744073709551615", []uint64{18446744073709551614, 18446744073709551615}},
	} {
		got, err := ParseSeeds(tc.spec)
		if err != nil {
			t.Errorf("ParseSeeds(%q): %v", tc.spec, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseSeeds(%q) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}

func TestParseSeedsErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "seed list is empty"},
		{"  ", "seed list is empty"},
		{"abc", `"abc" is not a seed`},
		{"-5", "missing number in a range"},
		{"5-", "missing number in a range"},
		{"1-2-3", `"2-3" is not a seed`},
		{"51-42", "range 51-42 runs backwards"},
		{"42,,43", "empty item"},
		{"42,", "empty item"},
		{"42,42", "seed 42 named twice"},
		{"40-45,44", "seed 44 named twice"},
		{"1.5", `"1.5" is not a seed`},
		{"18446744073709551616", "is not a seed"},
		{"0-100000", "more than 100000 seeds"},
		{"0-18446744073709551615", "more than 100000 seeds"},
		{"0-60000,100000-160000", "more than 100000 seeds"},
	} {
		_, err := ParseSeeds(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSeeds(%q) error = %v, want it to contain %q", tc.spec, err, tc.want)
		}
	}
}

func TestFormatSeeds(t *testing.T) {
	for _, tc := range []struct {
		seeds []uint64
		want  string
	}{
		{nil, ""},
		{[]uint64{7}, "7"},
		{[]uint64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}, "42-51"},
		{[]uint64{42, 43, 50}, "42-43,50"},
		{[]uint64{1, 3, 5}, "1,3,5"},
	} {
		if got := FormatSeeds(tc.seeds); got != tc.want {
			t.Errorf("FormatSeeds(%v) = %q, want %q", tc.seeds, got, tc.want)
		}
		if len(tc.seeds) > 0 {
			back, err := ParseSeeds(tc.want)
			if err != nil || !slices.Equal(back, tc.seeds) {
				t.Errorf("ParseSeeds(FormatSeeds(%v)) = %v, %v", tc.seeds, back, err)
			}
		}
	}
}

func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"7", "42-51", "42,43,50", "1-3,10", "", "-", "9-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		seeds, err := ParseSeeds(spec)
		if err != nil {
			return
		}
		if len(seeds) == 0 || len(seeds) > MaxSeeds {
			t.Fatalf("ParseSeeds(%q) gave %d seeds without error", spec, len(seeds))
		}
		for i := 1; i < len(seeds); i++ {
			if seeds[i] <= seeds[i-1] {
				t.Fatalf("ParseSeeds(%q) = %v: not strictly ascending", spec, seeds)
			}
		}
		back, err := ParseSeeds(FormatSeeds(seeds))
		if err != nil || !slices.Equal(back, seeds) {
			t.Fatalf("round trip of %q: %v, %v", spec, back, err)
		}
	})
}

func TestParseSchedulers(t *testing.T) {
	got, err := ParseSchedulers("all")
	if err != nil || !slices.Equal(got, []string{"random", "bestfit", "dotprod", "packing", "clustering", "fgd"}) {
		t.Errorf(`ParseSchedulers("all") = %v, %v`, got, err)
	}
	got, err = ParseSchedulers("fgd, kube,p2c")
	if err != nil || !slices.Equal(got, []string{"fgd", "kube", "p2c"}) {
		t.Errorf(`ParseSchedulers("fgd, kube,p2c") = %v, %v`, got, err)
	}
	for _, tc := range []struct{ spec, want string }{
		{"", "empty name"},
		{"fgd,", "empty name"},
		{"nope", `unknown scheduler "nope"`},
		{"fgd,fgd", `"fgd" named twice`},
		{"all,fgd", `"all" cannot be combined`},
	} {
		_, err := ParseSchedulers(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSchedulers(%q) error = %v, want it to contain %q", tc.spec, err, tc.want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"tegrl", "saturate", "--seeds", "42-51", "--out-md", "my docs/x.md", "--nodes=", "it's"})
	want := `tegrl saturate --seeds 42-51 --out-md 'my docs/x.md' --nodes= 'it'\''s'`
	if got != want {
		t.Errorf("CommandLine = %s\nwant          %s", got, want)
	}
	if got := CommandLine([]string{"a", ""}); got != "a ''" {
		t.Errorf("CommandLine with empty arg = %s", got)
	}
}
