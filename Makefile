# tegrl build, test and demo targets. Run from the repository root.

GO       ?= go
BIN      := bin/tegrl
FUZZTIME ?= 30s
# TRACES is the real-trace spec the demo runs: alibaba-gpu is the copy
# bundled in data/ (tegrl dataset fetch downloads the full trace).
TRACES   ?= alibaba-gpu

.PHONY: all build test check-long fuzz e2e-kube bench vet fmt-check demo clean

all: vet test build

## build: compile the tegrl command into bin/tegrl
build:
	$(GO) build -o $(BIN) ./cmd/tegrl

## test: fast tests with the race detector (-short; under 10 minutes on 2 cores),
## then the numeric packages again in the purego build, whose Go loops stand
## in for the assembly kernels on other CPUs
test:
	$(GO) test -race -short -timeout 9m ./...
	$(GO) test -short -tags purego ./nn ./gnn

## check-long: all tests without -short, then the exhaustive kernel checks
## (every float32 input; without the race detector, which only slows them),
## then every fuzzer for $(FUZZTIME), then the Kubernetes end-to-end check
check-long:
	$(GO) test -race -timeout 60m ./...
	$(GO) test -run 'TestTanhZ' ./nn
	$(MAKE) fuzz
	$(MAKE) e2e-kube

## e2e-kube: tegrl serve as kube-scheduler's extender (filter, prioritize,
## bind) against etcd, kube-apiserver and kube-scheduler built from
## k8s.io/kubernetes, all on 127.0.0.1: 50 nodes, 200 pods (docs/kubernetes.md)
e2e-kube:
	GO=$(GO) scripts/e2e-kube.sh

## fuzz: run each Fuzz* function of every package for $(FUZZTIME)
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

## bench: all benchmarks with allocation counts
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## vet: go vet, a gofmt check that fails on unformatted files, and
## scripts/vetwords.sh, which fails (file:line) on docs, comments or help
## text that speak of how the code was made, or cite files outside the repository
vet: fmt-check
	$(GO) vet ./...
	sh scripts/vetwords.sh

fmt-check:
	@out=$$(git ls-files -z --cached --others --exclude-standard '*.go' | xargs -0 -r gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## demo: build, compare every scheduler on a synthetic cluster, then the FGD
## saturation experiment, the real GPU cluster and its pod trace (bundled in
## data/), then a short training run over an embedded NATS server and an A/B
## report
demo: build
	@echo "== tegrl simulate: every scheduler, 1,000-machine synthetic cluster, bursty AI workload, 6 simulated hours"
	$(BIN) simulate --scheduler all --machines 1000 --seed 1 --log-level warn
	@echo; echo "== tegrl saturate: FGD saturation experiment on the Alibaba GPU trace, seeds 42-44, with the policy of tegrl train --preset saturate"
	$(BIN) saturate --scheduler all,docs/policies/saturate.safetensors --nodes $(TRACES) --pods $(TRACES) --seeds 42-44 --log-level warn
	@echo; echo "== tegrl simulate: the real Alibaba GPU cluster (1,523 machines) under the synthetic workload, 1 simulated hour"
	$(BIN) simulate --scheduler all --cluster $(TRACES) --seed 1 --duration 1h --log-level warn
	@echo; echo "== tegrl simulate: the real cluster under its own pods, 2 trace hours of week 17 resampled to offered load 1.0 (docs/data.md)"
	$(BIN) simulate --scheduler all --cluster $(TRACES) --workload $(TRACES) --start 2856h --window 2h --load 1.0 --seed 1 --log-level warn
	@echo; echo "== tegrl train: PPO + V-trace, one actor over an embedded NATS server, 20,000 decisions (the full preset learns from 1M), then held-out seeds"
	$(BIN) train --preset small --steps 20000 --eval-seeds 101-103 --out bin/demo-train --log-level warn
	@echo; echo "== tegrl ab: the small preset's trained policy (docs/policies/small.safetensors) against langevin, 6 seeds"
	$(BIN) ab --a langevin --b docs/policies/small.safetensors --machines 96 --duration 2h --seeds 101-106 --ref "" --log-level warn | grep -E 'metric|slowdown|sla_violation|safety_violations|mean_jct'

## clean: remove build outputs and test caches
clean:
	rm -rf bin
	$(GO) clean -testcache
