# snapshift — see README.md. Every target works on a fresh clone.
GO      ?= go
BIN     := bin/snapshift
DEMO    := out/demo
PKGS    := ./...

.PHONY: lab-conformance all build test e2e lab lab-ha lab-ansible lab-faults lab-window lab-clean demo bench bench-xlarge lint fmt tidy clean sample docs bench-8g bench-scale release release-check install-check failpoints crash

all: build

# The version, commit and date from git, as kubectl's build stamps them: a
# build the Go toolchain does not stamp (GOFLAGS=-buildvcs=false, a source
# tree copied without .git but built by a checkout's make) still says which
# snapshift it is. Outside a git checkout nothing is set (the toolchain's own
# stamp, or "devel").
BUILDINFO := github.com/snapshift/snapshift/internal/buildinfo
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS ?= $(if $(GIT_COMMIT),-X $(BUILDINFO).version=$(shell git describe --tags --dirty 2>/dev/null || echo devel+$$(git rev-parse --short=12 HEAD)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)) -X $(BUILDINFO).commit=$(GIT_COMMIT) -X $(BUILDINFO).date=$(shell git log -1 --format=%cI))

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/snapshift

# Unit, golden, conformance and real-etcd end-to-end tests, with the fuzz
# seed corpora; then the goldens again on the reference writer (bbolt's own
# Put; the snapshot package's writer tests run on both writers themselves).
# Well under 15 minutes on 2 cores.
test:
	$(GO) test -count=1 -timeout 15m $(PKGS)
	SNAPSHIFT_WRITER=bbolt $(GO) test -count=1 -run '^TestGolden$$' ./rules

# The binary with etcd's gofail failpoints compiled in (bin/snapshift-failpoints,
# for the crash suite): `gofail enable` runs on a copy of the tree, so the
# sources here never hold generated code; the copy is removed after the build.
FAILPOINT_PKGS := internal/fsutil snapshot nodeops
failpoints:
	@mkdir -p bin
	@src=$$(mktemp -d) && trap 'rm -rf "$$src"' EXIT && \
	  git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "$$src" 2>/dev/null; \
	  cd "$$src" && $(GO) tool gofail enable $(FAILPOINT_PKGS) && \
	  $(GO) build -o $(CURDIR)/bin/snapshift-failpoints ./cmd/snapshift && \
	  $(GO) tool gofail disable $(FAILPOINT_PKGS)
	@echo "built bin/snapshift-failpoints (failpoints: $$(grep -ho 'gofail: var [A-Za-z]*' $(addsuffix /*.go,$(FAILPOINT_PKGS)) | cut -d' ' -f3 | tr '\n' ' '))"

# Crash consistency (issue 23): the failpoint binary killed at every
# failpoint (panic and SIGKILL) in every writing command, at random times, and
# on a full disk; then the input, the outputs and the next run are checked.
crash: failpoints build
	@mkdir -p out
	@SNAPSHIFT_FAILPOINTS_BIN=$(CURDIR)/bin/snapshift-failpoints SNAPSHIFT_BIN=$(CURDIR)/$(BIN) \
	  $(GO) test -count=1 -timeout 30m -tags crash ./internal/crashtest -v > out/crash.log 2>&1; status=$$?; \
	  grep -E '^crash:|^(ok|FAIL)\s' out/crash.log; \
	  if [ $$status -ne 0 ]; then grep -E '^\s+(--- FAIL|[a-z_]+_test\.go:)' out/crash.log | head -50; fi; \
	  echo "make crash: the whole log is out/crash.log"; exit $$status

# Against the real thing: kube-apiserver and kube-controller-manager built from
# k8s.io/kubernetes (newest, and 1.30 with the bitmap allocator), and etcd +
# etcdutl 3.5, 3.6 and 3.7 (the version matrix), cached in
# ~/.cache/snapshift-e2e; run in a loopback-only network namespace. Then the
# lab (below; SNAPSHIFT_E2E_LAB=0 leaves it out).
e2e:
	bash hack/e2e.sh

# Issue 33: a cluster of real components (containerd, kubelet, the control plane
# as static pods...) in network namespaces on this machine, offline, as root,
# migrated by RUNBOOK.md's own steps and rolled back, old CA and new CA
# (hack/lab/lab.sh; builds cached in ~/.cache/snapshift-e2e). Part of make e2e.
# lab-clean removes what a killed run left (processes by PID, mounts, namespaces).
lab:
	bash hack/lab/lab.sh

# The three-control-plane variant (cp1, cp2, cp3: three etcd members), old CA
# and new CA. Part of make e2e.
lab-ha:
	LAB_CELL=three-cp bash hack/lab/lab.sh

# The window by the bundle's Ansible playbooks only (real ansible-playbook
# over real SSH into the nodes' namespaces), old CA and new CA, each rolled
# back. make e2e runs each of them in the cells above.
lab-ansible:
	LAB_CELL=one-cp-ansible bash hack/lab/lab.sh

# The downtime window, measured through each migration and rollback of the
# last lab run (its probes kept in out/lab-<cell>/logs/probes): the table,
# window.json and the timelines, again (issue 48).
# The window's faults (issue 51): a killed apply run again, a deadline that
# fires, a failed apply rolled back by the playbook (on three members), a
# restart stuck behind a partition: the fault scenarios of every cell, each
# cell's alone (make e2e and CI run them with the rest of their cells).
lab-faults:
	set -e; for cell in $$(python3 hack/lab/matrix.py cells-with-faults); do \
	  LAB_CELL=$$cell LAB_SCENARIOS="$$(python3 hack/lab/matrix.py faults $$cell)" bash hack/lab/lab.sh; done

# Kubernetes' own conformance suite judges the lab (issue 49): e2e.test and
# its images built from the k8s.io/kubernetes module (cached, nothing
# pulled), every [Conformance] test on the old cluster (the baseline), after
# every migration and after every rollback of each cell CI runs; a test that
# passed on the baseline and fails later fails the run. LAB_CONFORMANCE=
# network selects [sig-network]'s only; LAB_CELLS names the cells. CI runs
# [sig-network]'s after the migrations matrix.json names (make e2e).
lab-conformance:
	set -e; for cell in $${LAB_CELLS:-$$(python3 hack/lab/matrix.py ci)}; do \
	  LAB_CELL=$$cell LAB_CONFORMANCE=$${LAB_CONFORMANCE:-all} bash hack/lab/lab.sh; done

lab-window:
	bash hack/lab/window.sh

lab-clean:
	bash hack/lab/clean.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# The seed migration on the bundled sample: inspect, plan, transform, restore.
demo: build
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(BIN) inspect testdata/sample.db
	$(BIN) plan testdata/sample.db --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16 --quiet
	$(BIN) transform testdata/sample.db --out $(DEMO)/migrated.db --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16 --quiet
	$(BIN) restore $(DEMO)/migrated.db --name cp1 --data-dir $(DEMO)/etcd-cp1 \
		--initial-cluster cp1=https://127.0.0.1:2380 --initial-advertise-peer-urls https://127.0.0.1:2380
	$(BIN) verify $(DEMO)/migrated.db --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16 --quiet
	$(BIN) rebuild --config testdata/rebuild.yaml --quiet
	@echo "--- the disaster-recovery bundle ($(DEMO)/bundle):"
	@cd $(DEMO)/bundle && find . -maxdepth 3 -not -path './etcd/*/*' | sort | sed 's/^/  /'
	@echo "--- RUNBOOK.md, the order across the nodes (each node runs snapshift node apply / rollback):"
	@grep -E '^## |^snapshift node ' $(DEMO)/bundle/RUNBOOK.md | sed 's/^/  /'
	@echo "--- what a node's apply does (snapshift node apply --help):"
	@$(BIN) node apply --help | sed -n '/^DESCRIPTION/,/^OPTIONS/p' | sed '$$d' | sed 's/^/  /'
	@echo "demo output in $(DEMO): migrated.db, the restored member etcd-cp1/, and bundle/ with RUNBOOK.md"

# The whole-file benchmark (hack/bench.sh: generated small, medium and large
# snapshots of the basic, churn and services profiles; floor copy vs transform, plan,
# restore; cases in a random order per round (ORDER_SEED), warm and, as root, cold
# (COLD=false: warm only); medians, ratios, sys time, major faults, RSS; issue 28's
# targets met / NOT met), then the Go micro-benchmarks of the hot paths.
# SIZES=small RUNS=1 for a smoke run. It measures bin/snapshift as make build
# stamps it (snapbench alone builds an unstamped copy into its cache, never bin/).
bench: build
	SNAPSHIFT=$(CURDIR)/$(BIN) bash hack/bench.sh
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./codec ./cidr ./snapshot

# The 1M-key snapshot (over 3 GiB, beyond etcd's default 2 GiB quota, as clusters with a raised
# quota have), every profile.
bench-xlarge: build
	SIZES=xlarge SNAPSHIFT=$(CURDIR)/$(BIN) bash hack/bench.sh

# etcd's suggested maximum (issue 39): the ~8 GiB xxlarge snapshot (3.23M keys, generated once
# into ~/.cache/snapshift-bench and reused), basic profile, warm, cold and inside a 1 GiB memory
# cgroup, the cases that count there; refuses to start with less than ~30 GiB free (~21 GiB once generated).
bench-8g: build
	SIZES=xxlarge PROFILES=basic CGROUP=true CASES=floor-bbolt,cp+sha256sum,plan-migrate,restore-migrate,etcdutl-restore SNAPSHIFT=$(CURDIR)/$(BIN) bash hack/bench.sh

# Issue 48 item 4: cluster check against a real kube-apiserver holding
# SCALE_NODES Nodes (default 1000; 5000 takes about 10 minutes to build), 30
# Pods each and kube-proxy's DaemonSet, in a loopback-only network namespace
# (e2e/scale_test.go's BenchmarkClusterCheck). Not in CI.
SCALE_NODES ?= 1000
bench-scale:
	bash hack/build-k8s.sh v1.36.3 kube-apiserver
	go test -tags e2e -c -o bin/e2e.test ./e2e
	cd e2e && SNAPSHIFT_E2E_K8S=v1.36.3 SNAPSHIFT_SCALE_NODES=$(SCALE_NODES) unshare --net bash -c 'ip link set lo up && exec "$$@"' _ \
	  ../bin/e2e.test -test.run '^$$' -test.bench BenchmarkClusterCheck -test.benchtime 1x -test.timeout 60m

# Recreate testdata/sample.db with a real etcd.
sample:
	$(GO) run ./cmd/snapgen sample --out testdata/sample.db

# Reproducible release archives for linux and darwin, amd64 and arm64, with a
# CycloneDX SBOM each and SHA256SUMS, in dist/ (hack/release.sh). PLATFORMS=linux/amd64 for one.
release:
	bash hack/release.sh build

# Two release builds compared byte for byte (RELEASE_CHECK_COLD=1: the second with an empty
# build cache).
release-check:
	bash hack/release.sh check

# go install ...@version from a clean module cache, served the committed tree by a local module
# proxy; checks snapshift version -o json. Several minutes (a full compile): not in CI.
install-check:
	bash hack/install-check.sh

# docs/CLI.md and the man page docs/snapshift.8, from the command tree,
# README.md's exit code table, from the code's, and docs/OUTPUT.md, from the
# -o json documents' types (tests fail when they are not current).
docs:
	$(GO) test ./cmd/snapshift/app -run '^(TestCLIDocsCurrent|TestExitCodesDocumented|TestOutputSchemas)$$' -count=1 -update-docs

fmt:
	gofmt -w $$(git ls-files '*.go')

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin out dist
