package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl"
)

// The learned policies of tegrl train: a policy.safetensors file, or a
// training output directory holding one.
func init() {
	policyLoaders = append(policyLoaders, policyLoader{
		match: func(spec string) bool {
			if strings.HasSuffix(spec, ".safetensors") {
				return true
			}
			st, err := os.Stat(filepath.Join(spec, "policy.safetensors"))
			return err == nil && !st.IsDir()
		},
		load: loadPolicyFactory,
	})
}

// readPolicyFile reads a policy given as a policy.safetensors file or the
// train output folder that holds one; it returns the bytes and the path.
func readPolicyFile(spec string) ([]byte, string, error) {
	path := spec
	if !strings.HasSuffix(spec, ".safetensors") {
		path = filepath.Join(spec, "policy.safetensors")
	}
	b, err := os.ReadFile(path)
	return b, path, err
}

// loadPolicyFactory reads and checks a policy once; each instance gets its
// own copy of the network and runs it greedily (the evaluation mode).
func loadPolicyFactory(spec string) (func() env.Scheduler, error) {
	payload, path, err := readPolicyFile(spec)
	if err != nil {
		return nil, err
	}
	if _, _, err := rl.LoadPolicy(payload); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	name := spec
	return func() env.Scheduler {
		p, _, _ := rl.LoadPolicy(payload) // checked above
		return rl.NewScheduler(p, name, true, 0)
	}, nil
}
