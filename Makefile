# tegrl build, test and demo targets. Run from the repository root.

GO       ?= go
BIN      := bin/tegrl
FUZZTIME ?= 30s
TRACES   := ../shared/traces

.PHONY: all build test check-long fuzz bench vet fmt-check demo clean

all: vet test build

## build: compile the tegrl command into bin/tegrl
build:
	$(GO) build -o $(BIN) ./cmd/tegrl

## test: fast tests with the race detector (-short; under 10 minutes on 2 cores)
test:
	$(GO) test -race -short -timeout 9m ./...

## check-long: all tests without -short, then every fuzzer for $(FUZZTIME)
check-long:
	$(GO) test -race -timeout 60m ./...
	$(MAKE) fuzz

## fuzz: run each Fuzz* function of every package for $(FUZZTIME)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		list=$$($(GO) test -list 'Fuzz.*' $$pkg) || { echo "$$list"; exit 1; }; \
		for f in $$(echo "$$list" | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

## bench: all benchmarks with allocation counts
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## vet: go vet plus a gofmt check that fails on unformatted files
vet: fmt-check
	$(GO) vet ./...

fmt-check:
	@out=$$(git ls-files -z --cached --others --exclude-standard '*.go' | xargs -0 -r gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## demo: build, then the FGD saturation experiment on three seeds
demo: build
	@if [ -d $(TRACES) ]; then \
		$(BIN) saturate --scheduler all --seeds 42-44; \
	else \
		echo "demo: $(TRACES) not found; the saturation demo needs the Alibaba GPU trace there"; \
	fi

## clean: remove build outputs and test caches
clean:
	rm -rf bin
	$(GO) clean -testcache
