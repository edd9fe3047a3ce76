package main

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpFiles checks that every help file belongs to a command, every
// command's placeholders are filled, and no file is left unused.
func TestHelpFiles(t *testing.T) {
	var a app
	root := newRootCmd(&a)
	used := map[string]bool{}
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		name := prefix + c.Name()
		for _, text := range []string{c.Long, c.Example} {
			if strings.Contains(text, "{{") {
				t.Errorf("%s: unfilled placeholder in %q", name, text)
			}
		}
		if c.Long != "" && c.Long != c.Short {
			used[name+".txt"] = true
		}
		if c.Example != "" {
			used[name+".examples.txt"] = true
		}
		p := name + "-"
		if c == root {
			p = ""
		}
		for _, sub := range c.Commands() {
			walk(sub, p)
		}
	}
	walk(root, "")
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !used[strings.TrimPrefix(f, "help/")] {
			t.Errorf("%s belongs to no command", f)
		}
	}
}
