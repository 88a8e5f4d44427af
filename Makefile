# Targets an operator recognises: build test test-systemd lint bench deb rpm.
# Every target works; one that did not would be absent.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null | sed 's/^v//' || echo 0.0.0-dev)
PKG      := github.com/agor-sh/agor
LDFLAGS  := -s -w -X $(PKG)/internal/version.Version=$(VERSION)
BIN      := bin
CMDS     := agor-executor agorctl agor-daemon
# An execution count, not a duration: go1.26's fuzz coordinator can fail a
# clean run with "context deadline exceeded" at a duration's end
# (go.dev/issue/75804, fixed in Go 1.27). `make fuzz` is the long run
# (100000 inputs a target: 3-175 s each here); `make test` runs each
# target's corpus (in go test) and then a short run of FUZZTIME_TEST,
# which is what finds a regression of a decoder's bounds.
FUZZTIME ?= 100000x
FUZZTIME_TEST ?= 3000x
# test/phase NAME CMD: CMD timed under NAME when $$AGOR_TIMES is set
# (.ci/run sets it and prints the table: docs/testing.md).
PHASE := test/phase
# Every package with a fuzz target, named: internal/archtest's TestFuzzListed
# parses the tree and fails when one is left out or one named has none.
FUZZPKGS := ./internal/account ./internal/config ./internal/daemon/egress ./internal/daemon/gateway ./internal/dialback ./internal/executor ./internal/executor/fsroot ./internal/executor/gitguard ./internal/executor/terminal ./internal/identity ./internal/netpolicy ./internal/wire/rawframe ./internal/wire/rpc

export CGO_ENABLED ?= 0
# -trimpath for every go command a target runs (go test's own builds of
# agor-executor too): a build then does not name the checkout's path, so
# a fresh clone elsewhere reuses the Go build cache instead of compiling
# every package of the module again (210 s of a cold go test -race's
# builds, 59 s warm, on 2 cores).
GOFLAGS += -trimpath
export GOFLAGS

.PHONY: all build test deps vet fuzz fuzz-packages lint bench bench-smoke bench-list run clean man completions cockpit test-cockpit deb rpm test-systemd test-slurm

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(CMDS))

# deps installs what the tests need on a fresh Debian/Ubuntu machine.
deps:
	@$(PHASE) deps ./test/deps.sh

# test: unit and activation tests with the race detector and, beside them
# at a lower priority, vet and staticcheck, then each fuzz target's short
# run (their output after go test's; either failing fails test). Beside,
# since on a fresh machine's cold build cache vet and staticcheck took
# 169 s before go test began (CI-23), while go test's waits leave a core
# idle at times. -timeout is a hang's bound, not a speed limit: the e2e
# package takes about 5 minutes alone under -race and went past go test's
# default 10 on a machine three times loaded.
# The longest packages first: go test starts packages in the order named,
# two at a time, and executor/task, named last by ./..., ran alone at the
# end with one core idle for minutes.
SLOWPKGS := ./internal/daemon/e2e ./internal/executor/task ./internal/executor/agent ./internal/sandbox ./internal/daemon/store ./internal/daemon/api
test: deps test-cockpit
	@mkdir -p test/.logs
	@nice -n 10 sh -c '$(MAKE) -s lint && $(PHASE) fuzz $(MAKE) -s fuzz FUZZTIME=$(FUZZTIME_TEST)' >test/.logs/beside.log 2>&1 & side=$$!; \
	echo 'go test -race $(SLOWPKGS) ./... (vet, staticcheck and fuzz beside it)'; \
	CGO_ENABLED=1 $(PHASE) "go test -race" test/gotest.sh -race -count=1 -timeout 30m $(SLOWPKGS) ./...; rc=$$?; \
	wait $$side; side_rc=$$?; \
	echo "== vet, staticcheck and fuzz, beside go test (exit $$side_rc):"; cat test/.logs/beside.log; \
	[ $$rc = 0 ] && [ $$side_rc = 0 ]

vet:
	$(PHASE) vet $(GO) vet ./...

fuzz-packages:
	@echo $(FUZZPKGS)

fuzz:
	@set -e; for p in $(FUZZPKGS); do \
		for t in $$($(GO) test -list '^Fuzz' $$p | grep ^Fuzz); do \
			echo "fuzz $$p $$t: $(FUZZTIME) inputs"; \
			$(PHASE) $$t $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -parallel 1 $$p; \
		done; \
	done

lint: vet
	$(PHASE) staticcheck $(GO) tool -modfile=tools/go.mod staticcheck ./...

# bench: every figure. bench-smoke: every bench of the same list once,
# one round and small sizes (go test -short; the programs' own flags), so
# that a bench that fails fails CI (.ci/run runs it after make test); its
# figures mean nothing. The suite's cold activation (root) is the
# real-systemd suite's bench concern, which CI runs there.
SMOKE :=
# $(call B,FULL,SMOKE): a bench's arguments in the full run, or the smoke's.
B = $(if $(SMOKE),$(2),$(1))
bench: build
	@$(MAKE) -s bench-list
bench-smoke: build
	@$(PHASE) "bench smoke" $(MAKE) -s bench-list SMOKE=1
bench-list:
	$(PHASE) rpcbench $(GO) run ./test/bench/rpcbench -executor $(BIN)/agor-executor $(call B,,-pings 2000 -rounds 2 -pipelined 2000 -notifications 3000 -notify-rounds 1)
	$(PHASE) egressbench $(GO) run ./test/bench/egressbench $(call B,,-size 1048576 -rounds 1)
	$(PHASE) gatewaybench $(GO) run ./test/bench/gatewaybench $(call B,,-rounds 1)
	$(PHASE) files $(GO) test $(call B,,-short) -run '^$$' -bench . -benchtime $(call B,3x,1x) ./internal/executor/files
	$(PHASE) procexec $(GO) test $(call B,,-short) -run '^$$' -bench . -benchtime $(call B,300x,1x) ./internal/executor/procexec
	@# The daemon's end-to-end benches: the smoke's in one test binary (one
	@# build, one harness), the full run's each with its own -benchtime.
	$(call B,$(GO) test -run '^$$' -bench Load -benchtime 1x ./internal/daemon/e2e,$(PHASE) e2e $(GO) test -short -timeout 30m -run '^$$' -bench . -benchtime 1x ./internal/daemon/e2e)
	$(call B,$(GO) test -timeout 30m -run '^$$' -bench Flood -benchtime 1x ./internal/daemon/e2e)
	$(call B,$(GO) test -run '^$$' -bench Files -benchtime 5x ./internal/daemon/e2e)
	$(PHASE) sandbox $(GO) test $(call B,,-short) -run '^$$' -bench Launcher -benchtime 1x ./internal/sandbox
	$(PHASE) gitguard $(GO) test $(call B,,-short) -run '^$$' -bench Guard -benchtime 1x ./internal/executor/gitguard
	$(PHASE) executorunit $(GO) test $(call B,,-short) -run '^$$' -bench Usage100 -benchtime $(call B,11x,1x) ./internal/executorunit
	$(PHASE) terminal $(GO) test $(call B,,-short) -run '^$$' -bench . -benchtime 1x ./internal/executor/terminal
	$(call B,$(GO) test -run '^$$' -bench Terminal -benchtime 5x ./internal/daemon/e2e)
	$(call B,$(GO) test -run '^$$' -bench BlindAcrossRestart -benchtime 11x ./internal/daemon/e2e)
	$(PHASE) store $(GO) test $(call B,,-short) -run '^$$' -bench . $(call B,,-benchtime 1x) ./internal/daemon/broker ./internal/daemon/store
	test/agents.sh
	@# The agents' benches, each CLI's; the smoke's with two of them
	@# (Claude Code, and gemini, for which the benches have paths of
	@# their own): every bench's code once, where the four CLIs took 470 s
	@# of CI beside the suite (each CLI is in the tests, every mode).
	$(PHASE) task $(GO) test $(call B,,-short) -timeout 30m -run '^$$' -bench $(call B,.,'/^(claude-code|gemini)$$') -benchtime $(call B,5x,1x) ./internal/executor/task
	@# Cold activation under systemd (hardening, and an environment's executor
	@# against the host's) needs the real-systemd suite's container: root.
	@if [ -n "$(SMOKE)" ]; then :; elif [ "$$(id -u)" = 0 ]; then AGOR_SUITE_BENCH=full AGOR_SUITE_ONLY="install bench" ./test/systemd/run.sh bookworm; \
	else echo "bench: cold activation under systemd skipped: it boots a container (run make bench as root)"; fi

# run: build and start an executor by hand on a private socket, ping it with
# agorctl, and leave it serving until Ctrl-C.
run: build
	@./test/run-demo.sh $(BIN)

# Packages: one description (packaging/nfpm.yaml), nfpm pinned in tools/go.mod.
PKG_VERSION ?= 0.1.0
NFPM := $(GO) tool -modfile=tools/go.mod nfpm

# man: agorctl(1) generated from agorctl's command definitions (agorctl man),
# so that it cannot drift from the flags; agor-executor(8) and agor-daemon(8)
# are written by hand. Dated by the last commit (SOURCE_DATE_EPOCH).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
man: build
	@mkdir -p dist/man
	env -u AGOR_SOCKET SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(BIN)/agorctl man > dist/man/agorctl.1
	gzip -9nf dist/man/agorctl.1
	gzip -9n -c packaging/man/agor-executor.8 > dist/man/agor-executor.8.gz
	gzip -9n -c packaging/man/agor-daemon.8 > dist/man/agor-daemon.8.gz
	gzip -9n -c packaging/slurm.md > dist/man/slurm.md.gz

# completions: agorctl's bash, zsh and fish completion scripts, for the packages.
completions: build
	@mkdir -p dist/completions
	$(BIN)/agorctl completion bash > dist/completions/agorctl.bash
	$(BIN)/agorctl completion zsh > dist/completions/_agorctl
	$(BIN)/agorctl completion fish > dist/completions/agorctl.fish

# cockpit: agor's page in Cockpit (cockpit/), bundled by esbuild from the
# npm packages package-lock.json pins, into dist/cockpit/agor.
COCKPIT_NPM := cockpit/node_modules/.package-lock.json
$(COCKPIT_NPM): cockpit/package-lock.json
	cd cockpit && npm ci --no-audit --no-fund --loglevel=error
	@touch $@
cockpit: $(COCKPIT_NPM)
	node cockpit/build.mjs dist/cockpit/agor

# test-cockpit: the page's own tests (its reading of the event streams).
test-cockpit:
	$(PHASE) "cockpit page" node --test cockpit/test/

# deb rpm: agor, and agor-cockpit (packaging/cockpit/nfpm.yaml) beside it.
deb rpm:
	$(MAKE) man completions cockpit VERSION=$(PKG_VERSION)
	sed $(if $(filter deb,$@),'/^license:/d',-n p) packaging/nfpm.yaml > dist/nfpm-$@.yaml
	VERSION=$(PKG_VERSION) $(NFPM) package -f dist/nfpm-$@.yaml -p $@ -t dist/
	sed $(if $(filter deb,$@),'/^license:/d',-n p) packaging/cockpit/nfpm.yaml > dist/nfpm-cockpit-$@.yaml
	VERSION=$(PKG_VERSION) $(NFPM) package -f dist/nfpm-cockpit-$@.yaml -p $@ -t dist/

# test-systemd: the real-systemd suite (boots systemd in systemd-nspawn; root).
test-systemd:
	./test/systemd/run.sh

# test-slurm: a login host and two Slurm compute nodes in systemd-nspawn on
# a private bridge (root).
test-slurm: build
	./test/slurm/run.sh

clean:
	rm -rf $(BIN) dist
