# Thin wrapper over CMake: every target installs missing distro packages first.
BUILD      ?= build
SAN_BUILD  ?= build-san
PREFIX     ?= /usr/local
CMAKE_GEN  := -G Ninja

.PHONY: all deps build test test-fast test-san demo install bench bench-eval bench-smoke clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD)

# The whole suite, then again under ASan/UBSan with clang (which also runs the fuzzer).
test: test-fast test-san

test-fast: build
	cd $(BUILD) && ctest --output-on-failure

test-san: deps
	@CC=clang cmake -S . -B $(SAN_BUILD) $(CMAKE_GEN) -DCOMEX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(SAN_BUILD)
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ctest --output-on-failure

demo: build
	@bash scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD)

bench: build
	python3 bench/transport.py --build $(BUILD)
	python3 bench/pager.py --build $(BUILD)

# The evaluation against swap-disk, zram and all-local (docs/BENCH.md, ~35-45 min, root):
# JSON in bench/results, plots in docs/img, docs/RESULTS.md.
bench-eval: build
	bash bench/run_eval.sh $(BUILD)

# Every mode once at a tiny size, outputs verified (also part of `make test`).
bench-smoke: build
	/usr/bin/python3 -m bench.harness smoke --build $(BUILD) --no-save --runs 1 --workloads mt,python \
	  --sizes mt=48,python=64 --fractions 90

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
