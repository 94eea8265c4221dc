# Thin wrapper around meson: the real build description is meson.build.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
PLAIN_BUILD ?= build-plain
# The same as BUILD with every trace event compiled out: make bench's
# trace part holds BUILD's events, off, against it.
NOTRACE_BUILD ?= build-notrace
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = fuzz-llan fuzz-migration fuzz-qtest fuzz-qmp fuzz-options
MESON_TEST  = meson test --print-errorlogs --num-processes 2
SOAK_SECONDS ?= 600
SOAK_BUILD   ?= $(BUILD)
SOAK         = tests/soak/soak.py --secs $(SOAK_SECONDS) $(SOAK_ARGS)
QEMU_GUEST  ?= $(BUILD)/qemu-guest

# How the sanitizer trees run, for check-asan/check-tsan and the soak:
# the reasons are given at check-asan and check-tsan below.
ASAN_RUN = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	setarch $$(uname -m) -R
TSAN_RUN = G_SLICE=always-malloc \
	TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1:atexit_sleep_ms=0 \
	setarch $$(uname -m) -R

.PHONY: all deps bench-deps run check check-asan check-tsan check-clang \
	check-plain check-qemu fuzz bench soak soak-asan soak-tsan clean

all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

# Link-time optimisation inlines the small accessors (guest RAM, TCE
# translation) that every received frame goes through, across files.
$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized -Db_lto=true

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

# ThreadSanitizer with gcc's runtime (libtsan2 comes with gcc; clang's is a
# separate package).  No LTO, and -O0: every access the source makes is
# instrumented, none merged or dropped by the optimiser, and the suites
# take no longer than at -O1 (they wait on I/O, not on the CPU).
$(TSAN_BUILD)/build.ninja:
	meson setup $(TSAN_BUILD) --buildtype=debug -Db_lto=false \
	    -Db_sanitize=thread -Db_lundef=false

deps:
	scripts/install-deps.sh

# What make bench needs beyond make check: DPDK's testpmd, the peer.
bench-deps:
	scripts/install-deps.sh --bench

# The main job: real traffic through spapr-vlan, pools off against on
# (scripts/demo.py says what it does, and what it skips without root).
# RUN_ARGS go to scripts/demo.py: make run RUN_ARGS="--matrix-secs 0".
run: deps all
	scripts/demo.py --build $(BUILD) $(RUN_ARGS)

check: deps
	$(MAKE) all
	cd $(BUILD) && $(MESON_TEST)

# setarch -R for the same reason as check-tsan below: with address
# randomisation above vm.mmap_rnd_bits=28, gcc 12's ASan can loop on
# "AddressSanitizer:DEADLYSIGNAL" at start (seen here while the bits
# were raised to 30).
check-asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	cd $(ASAN_BUILD) && $(ASAN_RUN) $(MESON_TEST)

# A report ends the process with status 66, which fails the test that ran
# it (an illan child's report shows in its test's log).  setarch -R turns
# off address randomisation for the suites and every process they start:
# gcc 12's TSan expects the layout of vm.mmap_rnd_bits=28 and dies with
# "unexpected memory mapping" on most starts above that (checked at 30 and
# 32); this needs neither root nor a global sysctl.  atexit_sleep_ms=0:
# TSan otherwise waits 1 s at every exit while another thread lives (GLib's
# signal thread does from the start), and cmdline-test runs ~100 illans
# that exit on an error.  G_SLICE=always-malloc: GLib 2.74's slice
# allocator hands a block one thread freed to another without a free()
# TSan can see (a GString the migration thread's writer freed, reused by
# QMP's), which it reports as a race; plain malloc it understands.
check-tsan: deps $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD)
	cd $(TSAN_BUILD) && $(TSAN_RUN) $(MESON_TEST)

# libFuzzer needs clang; the targets and what each checks are in
# docs/devel/fuzzing.md.  make fuzz builds only the targets in this tree,
# make check-clang all the rest.
$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) --buildtype=debugoptimized \
	    -Db_lto=false -Db_sanitize=address,undefined -Db_lundef=false \
	    -Dfuzzing=true

# Everything, tests and tools included, compiled by clang too: its
# warnings are not gcc's, and -Werror holds for both.  In the fuzz tree,
# so that the fuzz targets reuse what it compiles; nothing is run.
check-clang: deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)

# Everything built as a bare `meson setup` builds it (meson.build's
# default, debugoptimized, without LTO): gcc's flow warnings at -O2
# differ with LTO and without (maybe-uninitialized came only without),
# and -Werror holds for both.  Nothing is run.
$(PLAIN_BUILD)/build.ninja:
	meson setup $(PLAIN_BUILD)

check-plain: deps $(PLAIN_BUILD)/build.ninja
	ninja -C $(PLAIN_BUILD)

# Each target for FUZZ_SECONDS, one after the other; fails on a finding.
fuzz: deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) $(addprefix tests/fuzz/,$(FUZZ_TARGETS))
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# QEMU's streams illan must refuse, and one it carries back byte for byte
# (refusals.py, a second); then a Linux guest booted on QEMU's pseries
# hands its spapr-vlan to illan and takes it back, in four machine setups (root; QEMU and the ppc64el guest
# come from Debian's packages; under 2 minutes; docs/devel/check-qemu.md);
# then the hcalls that guest's ibmveth issues per scenario, from QEMU's
# trace (hcall-census.py, about 35 s; docs/devel/linux-hcalls.md).
# QEMU_ARGS passes options, e.g. QEMU_ARGS="--cases pseries-2.5".
check-qemu: deps
	$(MAKE) all
	scripts/install-qemu-guest.sh $(QEMU_GUEST)
	tests/qemu/refusals.py --build $(BUILD)
	tests/qemu/takeover.py --build $(BUILD) --guest $(QEMU_GUEST) $(QEMU_ARGS)
	tests/qemu/hcall-census.py --guest $(QEMU_GUEST) --json $(BUILD)/hcall-census.json

# Per-frame CPU and frame rates over af-xdp against a bare AF_XDP socket
# and DPDK's testpmd, and XDP-to-guest latency, in private network
# namespaces (root; ~30 minutes;
# docs/devel/benchmarks.md).  Not part of check.  BENCH_ARGS passes
# options, e.g. BENCH_ARGS="--only raw".
$(NOTRACE_BUILD)/build.ninja:
	meson setup $(NOTRACE_BUILD) --buildtype=debugoptimized -Db_lto=true \
	    -Dtrace_backends=nop

bench: bench-deps all $(NOTRACE_BUILD)/build.ninja
	ninja -C $(NOTRACE_BUILD) illan
	tests/bench/bench.py --build $(BUILD) --notrace-build $(NOTRACE_BUILD) \
	    $(BENCH_ARGS)

# Ten minutes (SOAK_SECONDS) of af-xdp traffic both ways through a
# fwd=macswap guest while links flap, the interface is re-created, the
# machine resets and live-migrates every minute; then every layer's frames
# must balance, RSS and descriptors hold their level, and no sanitizer
# report (root; docs/devel/soak.md).  SOAK_BUILD picks the tree; soak-asan
# and soak-tsan run it on the sanitizer trees as check-asan and check-tsan
# run the suites.
soak: deps
	$(MAKE) BUILD=$(SOAK_BUILD) all
	$(SOAK) --build $(SOAK_BUILD)

soak-asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	$(ASAN_RUN) $(SOAK) --build $(ASAN_BUILD)

soak-tsan: deps $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD)
	$(TSAN_RUN) $(SOAK) --build $(TSAN_BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(PLAIN_BUILD) $(FUZZ_BUILD)
