# SPDX-License-Identifier: MIT
# The two commands of the README:
#   make test    build and run the whole test suite (native, ASan+UBSan,
#                TSan for the threaded tests, valgrind subset, ucontext backend, AArch64 under qemu,
#                install consumers, the Python tooling's tests, the Debian
#                packages and the CHICKEN egg)
#   make bench   run the benchmark suites (20 min) and write build/results.jsonl
#                and build/report/ (QUICK=1: 5 min; FULL=1: every sweep, 55 min;
#                SUITE=name for one; BENCH_MINUTES=M for another budget, 0: none)
#   make httpd   build and run baton-httpd (PORT, WORKERS, HANDLER)
#   make soak    the two soaks, one after the other, each for MINUTES
#                (default 10, so 20 min in all): soak-http, baton-httpd
#                under mixed load; then soak-smr, the stalled-reader bound
#                of hazard pointers. Either alone: make soak-http|soak-smr
#   make deb     the Debian packages (debian/) into build/deb/, lintian-checked
#   make docs    the man pages (build/docs/man/man3) and HTML reference
#                (build/docs/html) from the public headers, by Doxygen
# They install what they need first (Debian packages, a Python venv).

BUILD   := build
VENV    := $(BUILD)/venv
PY      := $(VENV)/bin/python
JOBS    ?= 2
# Each configuration is a preset of CMakePresets.json, built in build/NAME.
PRESET   = cmake --preset $(1) >/dev/null && cmake --build $(BUILD)/$(1)

.PHONY: test bench results httpd soak soak-http soak-smr deb docs deps-test deps-httpd deps-bench \
        deps-deb deps-docs deps-soak venv-test venv clean

deps-test:
	@tools/install-deps.sh test
deps-httpd:
	@tools/install-deps.sh httpd
deps-bench:
	@tools/install-deps.sh bench
deps-deb:
	@tools/install-deps.sh deb
deps-soak:
	@tools/install-deps.sh soak
deps-docs:
	@tools/install-deps.sh docs

# The venv's packages: tools/pyproject.toml's dependencies and the groups
# named (the one list of them; the package itself is not built).
PYDEPS = python3 -c 'import sys, tomllib; p = tomllib.load(open("tools/pyproject.toml", "rb"))["project"]; \
	print("\n".join(p["dependencies"] + [d for g in sys.argv[1:] for d in p["optional-dependencies"][g]]))'
$(VENV)/.test-stamp: tools/pyproject.toml
	python3 -m venv $(VENV)
	$(PYDEPS) bench test > $(VENV)/requirements-test.txt
	$(PY) -m pip install -q -r $(VENV)/requirements-test.txt
	touch $@
$(VENV)/.bench-stamp: tools/pyproject.toml
	python3 -m venv $(VENV)
	$(PYDEPS) bench > $(VENV)/requirements-bench.txt
	$(PY) -m pip install -q -r $(VENV)/requirements-bench.txt
	touch $@

# The test matrix is data: the workflow presets ci-* of CMakePresets.json
# (configure, build and test each configuration: native, ASan+UBSan, TSan
# on the tests labelled threads, ucontext on the unit tests, AArch64 under
# qemu; and the ring peers and select-baton that tools/tests runs), run in their order. `cmake --workflow
# --preset ci-NAME` runs one of them alone.
CI_WORKFLOWS = $(shell python3 -c 'import json; \
	print(" ".join(w["name"] for w in json.load(open("CMakePresets.json"))["workflowPresets"] \
	if w["name"].startswith("ci-")))')
export CTEST_PARALLEL_LEVEL := $(JOBS)
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)

test: deps-test $(VENV)/.test-stamp
	@test -n "$(CI_WORKFLOWS)" || { echo "no ci-* workflow preset (cmake >= 3.25?)" >&2; exit 1; }
	for w in $(CI_WORKFLOWS); do cmake --workflow --preset $$w || exit 1; done
	# The server's robustness tests on the shipped binary, then on the
	# ASan+UBSan one: a leak (LeakSanitizer at exit) or any report fails them.
	# One pass per reactor backend: epoll for the shipped binary, io_uring
	# (the default where the kernel has it) for the ASan one.
	BATON_IO_BACKEND=epoll $(PY) -m pytest -q -p no:cacheprovider tests/http --httpd $(BUILD)/native/baton-httpd
	BATON_IO_BACKEND=io_uring $(PY) -m pytest -q -p no:cacheprovider tests/http --httpd $(BUILD)/asan/baton-httpd
	# The Python tooling, with the ring peers and select-baton (ci-bench-peers) that
	# tools/tests/test_ring_peers.py runs (correctness, not speed).
	$(PY) -m pytest -q -p no:cacheprovider tools/tests
	# The packages as a user gets them (tests/packaging): make deb, then the
	# .deb files unpacked into a scratch root, consumers built against it,
	# the packaged server started with its unit's command line; and the
	# CHICKEN egg installed with chicken-install into a scratch repository.
	tools/make-deb.sh $(BUILD)/deb
	$(PY) -m pytest -q -p no:cacheprovider tests/packaging --debs $(BUILD)/deb

BENCH_ARGS := $(if $(QUICK),--quick) $(if $(FULL),--full) $(foreach s,$(SUITE),--suite $(s)) \
              $(if $(BENCH_MINUTES),--minutes $(BENCH_MINUTES))

bench: deps-bench $(VENV)/.bench-stamp
	$(call PRESET,bench)
	PYTHONPATH=tools $(PY) -m baton_bench run --src . --build $(BUILD)/bench $(BENCH_ARGS) \
		--out $(BUILD)/results.jsonl --report $(BUILD)/report

# docs/results.md (every table) and the README's headline table (the
# targets), from the last make bench run's build/results.jsonl.
results: $(VENV)/.bench-stamp
	PYTHONPATH=tools $(PY) -m baton_bench report --results $(BUILD)/results.jsonl \
		--report $(BUILD)/report --docs docs/results.md --readme README.md

# The soaks, each for MINUTES (default 10). make soak runs soak-http, then
# soak-smr whatever the first gave (a long run should report both), and
# fails if either failed; sub-makes, so that -j never runs them together.
MINUTES ?= 10
soak:
	@$(MAKE) --no-print-directory soak-http; http=$$?; \
	$(MAKE) --no-print-directory soak-smr && exit $$http

# baton-httpd (tests/http/soak.py): two workers under mixed load for
# MINUTES (split between the C, Lua and Scheme handlers), then checks that
# nothing crashed, leaked or went unanswered. make test runs 60 s of it.
soak-http: deps-httpd
	cmake --preset release >/dev/null && cmake --build $(BUILD)/release --target baton-httpd
	python3 tests/http/soak.py --httpd $(BUILD)/release/baton-httpd --seconds $$(( $(MINUTES) * 60 ))

# Hazard pointers' promise (docs/smr.md): a slot held forever by a stalled
# reader while a writer retires for MINUTES and two readers keep
# protecting; tests/smr/test_smr.c with BATON_SMR_SOAK_SECONDS runs only
# that test, the time split between the two coroutine models. It prints
#   smr soak (BARRIER): S s, R retired, F freed, unreclaimed at most N
#   (bound B = max(2 x H slots, 64)): held
# from what it measured (N: the most pending after any retire) and exits 1
# if a retire ever left more than B unreclaimed or a check failed. Built
# in the native preset (-O2 -g as shipped; release builds no tests). CTest
# runs the same test with a fixed count, a few seconds.
soak-smr: deps-soak
	cmake --preset native >/dev/null && cmake --build $(BUILD)/native --target test_smr
	BATON_SMR_SOAK_SECONDS=$$(( $(MINUTES) * 60 )) $(BUILD)/native/tests/smr/test_smr

# Build and run baton-httpd in the foreground (Ctrl-C drains and stops):
#   make httpd [PORT=8080] [WORKERS=0] [HANDLER=hello]
PORT    ?= 8080
WORKERS ?= 0
HANDLER ?= hello
httpd: deps-httpd
	cmake --preset release >/dev/null && cmake --build $(BUILD)/release --target baton-httpd
	$(BUILD)/release/baton-httpd --port $(PORT) --workers $(WORKERS) --handler $(HANDLER)

# The Debian packages into build/deb/ (tools/make-deb.sh; docs/install.md).
deb: deps-deb
	tools/make-deb.sh $(BUILD)/deb

# The reference manual from the headers' comments (cmake/BatonDocs.cmake,
# docs/Doxyfile.in): `man -l build/docs/man/man3/baton_chan_send.3`,
# build/docs/html/index.html. The preset docs configures the library
# alone (build/docs/cmake) and writes into build/docs.
docs: deps-docs
	cmake --preset docs >/dev/null && cmake --build --preset docs

clean:
	rm -rf $(BUILD)
