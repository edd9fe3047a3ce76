package main

import (
	"embed"
	"strings"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
)

// The commands' long help and examples live in help/NAME.txt and
// help/NAME.examples.txt, so that the Go files hold flags and wiring.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpVars fills the lists a help text names but the code owns.
var helpVars = strings.NewReplacer(
	"{{schedulers}}", strings.Join(env.SchedulerNames, ", "),
	"{{policies}}", strings.Join(env.AllocationPolicyNames(), ", "),
	"{{datasets}}", strings.Join(datasets.CatalogNames(), ", "),
	"{{teg_params}}", strings.Join(env.TEGParamNames(), ", "),
	"{{scenarios}}", gpuScenarioHelp,
)

// helpText is the long help of the command name.
func helpText(name string) string { return readHelp("help/" + name + ".txt") }

// exampleText is the examples of the command name.
func exampleText(name string) string { return readHelp("help/" + name + ".examples.txt") }

func readHelp(path string) string {
	b, err := helpFiles.ReadFile(path)
	if err != nil {
		panic("tegrl: missing help file " + path) // a build without its help files is broken
	}
	return helpVars.Replace(strings.TrimSuffix(string(b), "\n"))
}
