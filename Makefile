# vgpu -- the two commands a user needs are `make demo` and `make test`.
# CMake does the building (scripts/build.sh: Ninja, configured once); this file only sequences it.
#   make           build/ (release with debug info): the programs only, after installing (as
#                  root) only the packages the build needs (scripts/deps.sh --build)
#   make asan      build-asan/ (AddressSanitizer + UBSan), test programs included
#   make test      everything CI runs: both builds with the test programs (VGPU_BUILD_TESTS=ON) and
#                  every package the tests need, both test suites, GPU tests (skip without a GPU), e2e,
#                  the fuzz smoke, format; every stage runs, then one summary line (scripts/test-all.sh)
#   make demo      vgpu on the simulated GPU in about 30 s: memory cap, compute cap, vgpu set, smi
#   make install   PREFIX=/usr/local (DESTDIR too): programs, libvgpu.so, the simulated driver,
#                  man pages, vgpu's bash completion
#   make images    build/images/vgpu-node.tar, vgpu-scheduler.tar: the container images, OCI archives,
#                  built without a registry or container engine (images/README.md; needs root)
#   make e2e       a real single-node Kubernetes 1.20 (built from Debian's sources) and vgpu on it (docs/e2e.md)
#   make bench     hook overhead benchmark (bench/)
#   make bench-sm  compute-limit accuracy, 30:70 sharing, settling, launch overhead (bench/)
#   make bench-allocate  device plugin Allocate latency vs pods in flight (bench/)
#   make bench-steer     GetPreferredAllocation with and without the scheduler's steering (bench/)
#   make bench-replay    placement quality on the Alibaba GPU trace, every policy, and on the
#                        workload families made from it (bench/replay.sh, bench/families.sh)
#   make bench-extender  vgpu-scheduler filter+prioritize latency over the 1,213-node cluster (bench/)
#   make bench-kube      the trace through the real kube-scheduler 1.20.2 + vgpu-scheduler beside
#                        in-process vgpu and fgd on the same pods (bench/kube-replay.sh; needs root):
#                        KUBE_BENCH_NODES (default "100 400"), KUBE_BENCH_SEEDS (42-44),
#                        KUBE_BENCH_TRACE (default)
#   make bench-load      the HTTP servers under load on 127.0.0.1: 10,000 idle connections, 2,000
#                        simultaneous /filter calls, /healthz beside idle ones, peak RSS (bench/load.sh)
#   make soak      an hour of pod churn on the e2e cluster: leaks, RSS, grants (bench/soak.sh)
#   make fuzz      every libFuzzer target in tests/fuzz/ for FUZZ_SECONDS (default 60) each
#   make fuzz-smoke the same for 10 s each: `make test`'s fuzz stage
#   make format    clang-format every C file
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: install all build build-tests asan deps deps-build images test test-release test-asan test-gpu e2e demo bench bench-callgrind bench-sm bench-allocate bench-steer bench-replay bench-extender bench-kube bench-load soak fuzz fuzz-smoke format clean

all: build

# Everything the tests, benchmarks and e2e need too (promtool, python3-grpcio, kubectl, ...).
deps:
	@bash scripts/deps.sh

# Only what the build needs: compiler, CMake, Ninja, the -dev libraries, help2man.
deps-build:
	@bash scripts/deps.sh --build

build: deps-build
	@JOBS=$(JOBS) bash scripts/build.sh build

# build/ with the test programs too (make test's release stage); plain make keeps them after.
build-tests: deps
	@JOBS=$(JOBS) bash scripts/build.sh build -DVGPU_BUILD_TESTS=ON

asan: deps
	@JOBS=$(JOBS) bash scripts/build.sh build-asan -DVGPU_SANITIZE=ON -DVGPU_BUILD_TESTS=ON

# PREFIX (default /usr/local) and DESTDIR as usual: PREFIX/bin (vgpu, vgpu-burn, vgpu-sim, the
# kubectl plugins, the daemons), PREFIX/lib/libvgpu.so, PREFIX/lib/vgpu-sim (the simulated driver,
# outside the loader's path: only vgpu run --sim uses it), PREFIX/share/man/man1 (every program's
# page, made by help2man from its --help: build/man), PREFIX/share/bash-completion/completions/vgpu.
PREFIX ?= /usr/local
install: build
	@cmake --install build --prefix "$(PREFIX)"

test-release: build-tests
	@cd build && ctest --output-on-failure -j $(JOBS)

test-asan: asan
	@cd build-asan && ctest --output-on-failure -j $(JOBS)

test-gpu: build
	@bash tests/gpu/run.sh

# Every stage runs even when one fails; the last line sums them all up.
test:
	@MAKE="$(MAKE)" bash scripts/test-all.sh

e2e: deps build
	@bash tests/e2e/run.sh

images: build
	@bash images/build.sh

# Builds quietly itself (build/demo-build.log; shown only on failure).
demo:
	@MAKE="$(MAKE)" bash scripts/demo.sh

# build-fuzz/: every target in tests/fuzz/ built with clang's libFuzzer, then fuzzed FUZZ_SECONDS
# each (scripts/fuzz.sh). fuzz-smoke is `make test`'s fuzz stage: 10 s each by default.
soak: deps build
	@bash bench/soak.sh

fuzz: deps
	@bash scripts/fuzz.sh

fuzz-smoke: deps
	@FUZZ_SECONDS="$${FUZZ_SECONDS:-10}" bash scripts/fuzz.sh

bench: build
	@bash bench/run-hook-bench.sh

bench-callgrind: build
	@bash bench/run-hook-bench.sh --callgrind

bench-sm: build
	@bash bench/sm-accuracy.sh

bench-allocate: deps build
	@/usr/bin/python3 bench/allocate_latency.py

bench-steer: deps build
	@/usr/bin/python3 bench/steer_latency.py

bench-replay: build
	@bash bench/replay.sh
	@POLICIES="fgd vgpu bestfit" bash bench/families.sh

bench-extender: build
	@/usr/bin/python3 bench/extender_latency.py

KUBE_BENCH_NODES ?= 100 400
KUBE_BENCH_SEEDS ?= 42-44
KUBE_BENCH_TRACE ?= default
bench-kube: deps build
	@for n in $(KUBE_BENCH_NODES); do \
	  bash bench/kube-replay.sh --nodes $$n --seeds $(KUBE_BENCH_SEEDS) --trace $(KUBE_BENCH_TRACE) || exit 1; \
	done

bench-load: build
	@bash bench/load.sh

format:
	@find src tests bench -name '*.[ch]' | xargs clang-format -i

clean:
	rm -rf build build-asan build-fuzz
