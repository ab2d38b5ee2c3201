# Haven: `make demo` and `make test` are the two set-up commands.
GO       ?= go
BIN      := bin
BINARIES := $(BIN)/nodemgr $(BIN)/svcmgr $(BIN)/svcmon
FUZZTIME ?= 10s

.PHONY: all build test unit fuzz demo lint docs clean bench

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/nodemgr ./cmd/svcmgr ./cmd/svcmon

# The whole suite: unit and table tests, real-process tests (daemons from the
# built binaries), network-namespace tests when root, and a short fuzz run.
test: build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 9m ./...
	$(MAKE) fuzz

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParseService -fuzztime=$(FUZZTIME) ./config
	$(GO) test -run='^$$' -fuzz=FuzzEnvelope -fuzztime=5s ./heartbeat

demo: build
	./demo/demo.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

docs:
	$(GO) run ./config/gendoc docs/keywords.md

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./monitor ./placement

clean:
	rm -rf $(BIN)
