# Haven: `make demo` and `make test` are the two set-up commands.
GO       ?= go
BIN      := bin
BINARIES := $(BIN)/nodemgr $(BIN)/svcmgr $(BIN)/svcmon
FUZZTIME ?= 10s

.PHONY: all build test unit fuzz demo lint docs clean bench chaos

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

# The chaos suite (root): named fault tests picked at random with SEED over a
# cluster of daemons in network namespaces, audited after each (docs/chaos.md).
# TESTS=A,B replays a sequence; ONLY=A,B picks among those tests.
SEED     ?= 1
DURATION ?= 10m
REPORT   ?= chaos-report.md
chaos: build
	$(GO) build -o $(BIN)/ ./cmd/chaos
	$(BIN)/chaos -bin $(BIN) -seed $(SEED) -duration $(DURATION) -report $(REPORT) \
		$(if $(TESTS),-tests $(TESTS)) $(if $(ONLY),-only $(ONLY))

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./monitor ./placement

clean:
	rm -rf $(BIN)
