# lockchaos — run `make help` for the targets.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/lockchaos
OUT   ?= out
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
SUDO  := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debian packages the tests and the local backend need.
DEBS  := redis-server redis-sentinel redis-tools zookeeper libslf4j-java default-jre-headless etcd-server chromium \
         python3-redis python3-kazoo python3-etcd3 python3-psycopg2 python3-pymysql libcurator-recipes-java default-jdk-headless libfaketime \
         postgresql pgbouncer mariadb-server
FUZZTIME ?= 20s
BENCH_LONG_RUN ?= 10m
SOAK ?= 10m
# The libraries `make analyses` analyzes: the shipped process clients and the Go lock libraries.
ANALYSES ?= redis-py kazoo kazoo-bare curator curator-bare psycopg2-advisory bsm-redislock bsm-redislock-refresh rueidislock zk-lock redsync etcd pglock

.PHONY: help deps images clients build test test-serverless fuzz-build test-short run matrix selftest reproduce analyses bench soak soak-bench fuzz vet clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

deps: ## install the servers and the browser the tests use (apt-get; sudo when not root)
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then \
	    echo "make deps: need root to install:$$missing (run: apt-get install$$missing)"; exit 1; fi; \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v $(GO) >/dev/null || { echo "make deps: Go is not installed (https://go.dev/doc/install)"; exit 1; }

CURATOR_CP := $(subst $(eval) ,:,$(addprefix /usr/share/java/,curator-recipes.jar curator-framework.jar curator-client.jar zookeeper.jar))

clients: deps ## compile the shipped Java process client (clients/curator) with javac
	mkdir -p clients/curator/build
	javac -d clients/curator/build -cp $(CURATOR_CP) clients/curator/CuratorLock.java

build: ## build bin/lockchaos
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/lockchaos

vet: ## gofmt, go vet, and go.mod/go.sum tidy
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "make vet: go.mod or go.sum is not tidy: run go mod tidy and commit the result"; exit 1; }

images: deps ## build the docker backend's images offline (lockchaos/redis, lockchaos/zookeeper, lockchaos/postgres, lockchaos/mariadb, lockchaos/pgbouncer, lockchaos/etcd); FORCE=1 rebuilds
	images/build.sh $(if $(FORCE),--force)

# The packages whose tests start no server run two at a time, with servers off and required (a
# test there that tried to start one would fail, not skip). The others run three at a time, the
# longest first: their tests mostly wait on timed faults (about half a core each, measured), and
# every test binary is compiled before any runs, so no timed fault shares the CPU with the
# compiler. (-p also bounds compiles: compiling at -p 3 beside running tests made op timeouts of
# 2 s expire in algorithms' tests.)
SERVERLESS = ./checker ./cluster/wire ./history ./internal/benchmd ./internal/histgen ./internal/lcerr ./internal/testenv
LONGEST = ./internal/runner ./cmd/lockchaos ./internal/explore ./internal/soak ./harness ./cluster ./cluster/docker ./algorithms
MODULE = github.com/lockchaos/lockchaos
WITH_SERVERS = $(LONGEST) $(filter-out $(patsubst ./%,$(MODULE)/%,$(SERVERLESS) $(LONGEST)),$(shell $(GO) list ./...))
TEST_FLAGS = -race -count=1 -vet=off
TEST_ENV = LOCKCHAOS_REQUIRE_SERVERS=1 LOCKCHAOS_REQUIRE_BROWSER=1 LOCKCHAOS_REQUIRE_DOCKER=1

# Every test package is compiled with -race before any test runs, so that no compile loads the
# timed tests (go list -export compiles without linking: go test links its binaries again anyway).
# The tests skip go test's own vet (-vet=off): make vet, before, runs every analyzer it would.
# The server tests wait on servers and faults more than they compute: beside them, at nice 19 (it
# takes only the CPU they leave), fuzz-build compiles the fuzz tests' instrumented packages, which
# the build cache then holds for the fuzzing. The CPU-bound steps (the server-free tests and the
# brief fuzzing) run side by side; the selftest's cells wait on their faults, four at a time.
test: deps images clients vet build ## install what the tests need, run every test (real servers, Docker, a real browser) with -race, each fuzz test briefly, then the selftest once
	$(GO) list -race -test -export ./... > /dev/null
	@nice -n 19 $(MAKE) --no-print-directory fuzz-build > /dev/null 2>&1 & warm=$$!; \
	echo "$(TEST_ENV) $(GO) test $(TEST_FLAGS) -p 3 -timeout 40m <the packages with servers>"; \
	$(TEST_ENV) $(GO) test $(TEST_FLAGS) -p 3 -timeout 40m $(WITH_SERVERS); rc=$$?; \
	wait $$warm; exit $$rc
	$(MAKE) --no-print-directory -j 2 --output-sync=target test-serverless fuzz FUZZTIME=5s
	$(BIN) selftest --parallel 4 --out $(OUT)/selftest

test-serverless:
	LOCKCHAOS_NO_SERVERS=1 LOCKCHAOS_REQUIRE_SERVERS=1 $(GO) test $(TEST_FLAGS) -p 2 -timeout 20m $(SERVERLESS)

test-short: ## unit tests only: no server starts (LOCKCHAOS_NO_SERVERS=1 makes every cluster refuse)
	LOCKCHAOS_NO_SERVERS=1 $(GO) test -short -count=1 ./...

run: deps build ## the main job: the default scenario matrix on the local backend, writing out/index.html
	$(BIN) matrix --out $(OUT) --parallel 6

matrix: run ## alias of run

selftest: deps build ## every scenario × the mutants it must catch and its real algorithms (out/selftest/selftest.html)
	$(BIN) selftest --parallel 2 --out $(OUT)/selftest

reproduce: deps build ## 20 runs of every selftest cell (real and mutant), caught/reproduced and TTD written to BENCHMARKS.md
	$(GO) run ./internal/reproduce --runs 20 --parallel 2 --out $(OUT)/reproduce --bench BENCHMARKS.md

analyses: deps images clients build ## lockchaos analyze of each library in ANALYSES (3 runs a scenario): out/analyses/NAME/analysis.html; exit 1 if a run missed its expectation
	@rc=0; for a in $(ANALYSES); do \
	  $(BIN) analyze --algorithm $$a --runs 3 --quiet --out $(OUT)/analyses/$$a; c=$$?; \
	  echo "$$a: $(OUT)/analyses/$$a/analysis.html (exit $$c)"; [ $$c -le 1 ] || exit $$c; [ $$c = 0 ] || rc=1; done; exit $$rc

bench: deps ## run the benchmarks (not the soak); they rewrite their sections of BENCHMARKS.md
	BENCH_LONG_RUN=$(BENCH_LONG_RUN) $(GO) test -run '^$$' -bench . -skip '^BenchmarkSoak(Command)?$$' -benchtime 1x -timeout 90m ./...

soak-bench: deps images ## lockchaos soak of each seed algorithm for SOAK_TIME (10m) and the token/redlock/zookeeper comparison: RSS and findings into BENCHMARKS.md "Soak: lockchaos soak"
	SOAK_TIME=$(SOAK) $(GO) test -run '^$$' -bench '^BenchmarkSoakCommand$$' -benchtime 1x -timeout 0 ./internal/soak/

soak: deps ## bounded long run (SOAK=10m): heap and goroutines sampled into BENCHMARKS.md "Soak"
	SOAK=$(SOAK) $(GO) test -run '^$$' -bench '^BenchmarkSoak$$' -benchtime 1x -timeout 0 ./internal/bench/

# A fuzz test that fails only with "context deadline exceeded" at the end of its time, writing no
# failing input, hit Go's own race between -fuzztime's deadline and a busy worker (golang/go#75804,
# fixed in go1.27; go1.26 here): it is run once more. Any other failure fails.
fuzz: ## run each fuzz test for FUZZTIME (20s)
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for t in $$(grep -rhoE 'func Fuzz[A-Za-z]+' --include '*_test.go' . | sed 's/func //' | sort -u); do \
	  pkg=$$(grep -rlE "func $$t\(" --include '*_test.go' . | head -1 | xargs dirname); \
	  echo "== $$t ($$pkg)"; \
	  for try in 1 2; do \
	    if $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg > $$log 2>&1; then tail -1 $$log; break; fi; \
	    cat $$log; \
	    if [ $$try = 1 ] && grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
	      echo "(golang/go#75804: the fuzz time's deadline raced a worker; no failing input; once more)"; continue; fi; \
	    exit 1; \
	  done; \
	done

# go test -fuzz instruments every package of the test's import graph (scenarios': 543 packages,
# 100 s to compile cold here). fuzz-build compiles each fuzz package's instrumented test binary and
# throws it away: what fuzz then builds is in the build cache. A failure here shows again in fuzz.
fuzz-build:
	@for pkg in $$(grep -rlE '^func Fuzz' --include '*_test.go' . | xargs -n1 dirname | sort -u); do \
	  t=$$(grep -hoE '^func Fuzz[A-Za-z]+' $$pkg/*_test.go | head -1 | sed 's/func //'); \
	  $(GO) test -c -o /dev/null -fuzz "^$$t$$" $$pkg || exit 1; \
	done

clean: ## remove build output and runs (OUT, default out/)
	rm -rf bin $(OUT)
