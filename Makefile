# diskprobe_exporter: the two commands of the README, and a few more.
#   make run    install what is missing, build, run the exporter on :29100 (no config file needed)
#   make test   install what is missing, build, run every test (unit, end-to-end with a real Prometheus)
# While working on the code:
#   make check      the unit tests alone: build them, run them (under a minute; no root, installs nothing)
#   make check-e2e  the end-to-end tests that take under a minute each (ctest -L e2e -LE slow)
#   make fuzz       each libFuzzer target for FUZZ_SECONDS (default 60; tests/fuzz/README.md)
# Tests carry ctest labels (unit, lint, e2e, deploy, slow, root): CTEST_ARGS="-L deploy" etc.
# Extra arguments for the exporter: make run ARGS="--log.level=debug"

BUILD    ?= build
# Compile jobs: one per core, as many as the available memory holds (scripts/pick-jobs.sh, about
# 700 MB each), so `make run` works on a 512 MB or 1 GB Pi. JOBS=N to choose.
ifeq ($(origin JOBS),undefined)
JOBS_PICKED := $(shell scripts/pick-jobs.sh)
JOBS := $(firstword $(JOBS_PICKED))
JOBS_WHY := $(wordlist 2,99,$(JOBS_PICKED))
else
JOBS_WHY := JOBS given
endif
ARGS     ?=
CMAKE_FLAGS ?=
# Warnings as errors: off for users (a newer compiler's new warning must not stop `make run`), on
# in CI (.ci/run sets WERROR=ON).
WERROR   ?= OFF
CTEST_ARGS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=

.PHONY: all deps deps-test configure build run test check check-e2e test-asan bench clean test-cross fuzz fuzz-ci \
        matrix test-matrix repo test-repo test-nvme-qemu test-sd-cmd56-errors test-sd-cmd56-qemu test-sata-qemu \
        test-armv6 test-pi-qemu

all: build

deps:
	scripts/install-deps.sh build

deps-test:
	scripts/install-deps.sh test

configure:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISKPROBE_BUILD_TESTS=ON -DDISKPROBE_WERROR=$(WERROR) $(CMAKE_FLAGS)

build: deps configure
	@echo "make: $(JOBS) compile job(s) ($(JOBS_WHY))"
	cmake --build $(BUILD) -j $(JOBS)

run: build
	exec $(BUILD)/diskprobe_exporter $(ARGS)

# Two tests at a time: the timing-sensitive ones are RUN_SERIAL (tests/CMakeLists.txt).
CTEST_JOBS ?= 2
test: deps-test configure
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) --output-on-failure -j $(CTEST_JOBS) $(CTEST_ARGS)

# No deps step: it needs root, and check should not. Without GoogleTest, CMake builds no tests:
# say how to get it rather than let ninja report an unknown target.
check: configure
	@ninja -C $(BUILD) -t query diskprobe_unit_tests >/dev/null 2>&1 || \
	  { echo "GoogleTest not found: run make deps-test (as root) once"; exit 1; }
	cmake --build $(BUILD) -j $(JOBS) --target diskprobe_unit_tests
	ctest --test-dir $(BUILD) -L unit -j $(JOBS) --output-on-failure $(CTEST_ARGS)

check-e2e: configure
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) -L e2e -LE slow --output-on-failure $(CTEST_ARGS)

# The same tests on an AddressSanitizer + UndefinedBehaviorSanitizer build, except those that
# check packaging, manifests, the unit's sandbox, alert rules, dashboards and Prometheus's side of
# the fleet path (deploy_*, fleet_*, prometheus_rules_*, dashboards_lint), and the bench beside
# fio on emulated cards (e2e_bench_cards: five minutes of figures that mean nothing for an
# instrumented binary; e2e_bench runs the same bench code here on this machine's disk): run by
# `make test`, they would add minutes to CI without exercising more of the exporter's code.
test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DDISKPROBE_ASAN=ON -DDISKPROBE_UBSAN=ON" \
	  CTEST_ARGS="-E '^(deploy_|fleet_|prometheus_rules_|dashboards_lint|e2e_bench_cards)'"

# The nvme collector in a QEMU guest (emulated NVMe controller, Debian's kernel) against the
# guest's nvme-cli: about a minute under TCG; not in `make test` (CI's time budget).
test-nvme-qemu: configure
	scripts/install-deps.sh qemu
	cmake --build $(BUILD) -j $(JOBS) --target diskprobe_exporter
	tests/e2e/nvme_qemu_e2e.sh $(BUILD)/diskprobe_exporter

# The SD vendor health reader's error path on a real kernel (a loop device refuses MMC_IOC_CMD),
# with its cost figures; also part of `make test` (about 5 s, root).
test-sd-cmd56-errors: configure
	cmake --build $(BUILD) -j $(JOBS) --target diskprobe_exporter
	tests/e2e/sd_cmd56_errors_e2e.sh $(BUILD)/diskprobe_exporter

# CMD56 in QEMU's Raspberry Pi 3B with Debian's arm64 kernel: what the emulated card answers, EPERM
# on a partition and without CAP_SYS_RAWIO (1-2 minutes under TCG); not in `make test`.
test-sd-cmd56-qemu:
	scripts/install-deps.sh qemu
	tests/e2e/sd_cmd56_qemu_e2e.sh

# The smart collector in a QEMU guest (AHCI + IDE disk, Debian's kernel, the guest's smartctl),
# compared with smartctl's own JSON and text reports: about a minute under TCG; not in `make test`.
test-sata-qemu: configure
	scripts/install-deps.sh qemu
	cmake --build $(BUILD) -j $(JOBS) --target diskprobe_exporter
	tests/e2e/sata_qemu_e2e.sh $(BUILD)/diskprobe_exporter

# The packaged exporter on an emulated Raspberry Pi, a row of scripts/pi-boards.tsv: PI_BOARD=pi3b
# (QEMU raspi3b, Debian 13 arm64 and its kernel, the arm64 package) or pi0 (raspi0, the Pi Zero's
# ARM1176: Debian 12 armel, its rpi kernel, the ARMv6 package); PI_SUITE=bookworm|trixie picks the
# other Debian; systemd, the kernel's SD host driver, the .deb from scripts/build-deb.sh or PI_DEB:
# image made once and cached (scripts/pi-image.sh), then a TCG boot and the checks; README "A
# Raspberry Pi in a box". .ci/run runs both boards.
PI_BOARD ?= pi3b
test-pi-qemu:
	scripts/install-deps.sh pi-qemu
	tests/e2e/pi_qemu_e2e.sh $(PI_BOARD)

# Cost of a scrape beside node_exporter; impact and CPU cost of the probes beside fio on an
# emulated card (root, FUSE and loop devices needed). tests/bench/README.md
bench: deps-test configure
	cmake --build $(BUILD) -j $(JOBS)
	tests/bench/scrape_cost $(BUILD)/diskprobe_exporter
	tests/bench/probe_impact $(BUILD)/diskprobe_exporter
	tests/bench/probe_cost $(BUILD)/diskprobe_exporter

# Cross builds for the Pi (arm64, armhf): sysroot from Debian packages, unit tests under qemu,
# binary size and RSS after 100 scrapes (scripts/cross-test.sh).
test-cross:
	scripts/cross-test.sh arm64
	scripts/cross-test.sh armhf

# The static ARMv6 build (Pi 1, Zero, Zero W): unit tests under qemu-arm -cpu arm1176, readelf's
# CPU architecture, a Debian armhf program dying with SIGILL on that core, the package
# diskprobe-exporter-armv6 on an empty Debian armhf root serving /metrics (scripts/armv6-test.sh).
# Not in .ci/run: a build of its own with no ccache hits from the other builds (docs/packaging.md).
test-armv6:
	DISKPROBE_CACHE=$(MATRIX_CACHE) JOBS=$(JOBS) scripts/armv6-test.sh

# libFuzzer (clang 14, ASan + UBSan) on the config and web config loaders, every parser and the
# HTTP request head, seeded from tests/fixtures: FUZZ_SECONDS per target, FUZZ_TARGETS="kmsg config"
# for some. Prints executions, exec/s and crashes per target; fails when one crashed. Only the
# fuzz targets and the libraries they link are built, in $(FUZZ_BUILD).
fuzz:
	scripts/install-deps.sh fuzz
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISKPROBE_BUILD_TESTS=OFF \
	  -DDISKPROBE_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 -DDISKPROBE_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target diskprobe_fuzzers
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# CI's run: 15 s per target (14 targets, about 4 minutes beside the clang build).
fuzz-ci:
	$(MAKE) fuzz FUZZ_SECONDS=15

# The package matrix: Debian 12 (bookworm) and 13 (trixie), each for amd64, arm64 and armhf, built
# against that suite's own libraries with Debian's hardening flags (scripts/build-deb.sh; trixie in
# a trixie build root). Not in .ci/run: six Release builds take far longer than CI's budget on 2
# cores (docs/packaging.md says which part runs where). Root; caches in $(MATRIX_CACHE).
MATRIX_CACHE ?= /var/cache/diskprobe-build
MATRIX_SUITES ?= bookworm trixie
MATRIX_ARCHS ?= amd64 arm64 armhf armv6
MATRIX_OUT ?= build-deb
REPO_DIR ?= build-repo
matrix:
	scripts/install-deps.sh matrix
	for s in $(MATRIX_SUITES); do for a in $(MATRIX_ARCHS); do \
	  DISKPROBE_CACHE=$(MATRIX_CACHE) JOBS=$(JOBS) scripts/build-deb.sh $$s $$a $(MATRIX_OUT) || exit 1; done; done

# Each package of the matrix on a clean system of its suite: lintian, hardening, install, /metrics.
test-matrix: matrix
	for s in $(MATRIX_SUITES); do for a in $(MATRIX_ARCHS); do \
	  v=$$(case $$s in bookworm) echo 12;; trixie) echo 13;; esac); \
	  case $$a in armv6) deb=diskprobe-exporter-armv6_*~deb$${v}_armhf.deb ;; *) deb=diskprobe-exporter_*~deb$${v}_$$a.deb ;; esac; \
	  DISKPROBE_CACHE=$(MATRIX_CACHE) scripts/test-deb.sh $$s $$a $(MATRIX_OUT)/$$deb || exit 1; done; done

# The signed apt repository of every matrix package, in $(REPO_DIR) (the key stays outside the
# repository: scripts/make-repo.sh), and its test: apt on Debian 12 and 13 installs from it.
repo: matrix
	scripts/make-repo.sh $(MATRIX_OUT) $(REPO_DIR)

test-repo: repo
	DISKPROBE_CACHE=$(MATRIX_CACHE) scripts/test-repo.sh $(REPO_DIR)

clean:
	rm -rf build build-asan build-fuzz build-deb build-repo
