# Thin wrapper over CMake: every target installs missing distro packages first.
BUILD      ?= build
SAN_BUILD  ?= build-san
PREFIX     ?= /usr/local
CMAKE_GEN  := -G Ninja

DEB_BUILD  ?= build-deb

.PHONY: all deps build test test-fast test-san demo install deb bench bench-eval bench-smoke bench-quick clean

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

# A Debian package (prefix /usr) in $(DEB_BUILD)/comex_VERSION_ARCH.deb.
deb: deps
	@cmake -S . -B $(DEB_BUILD) $(CMAKE_GEN) -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(DEB_BUILD) --target comex comex-rt man
	cd $(DEB_BUILD) && cpack -G DEB

bench: build
	python3 bench/transport.py --build $(BUILD)
	python3 bench/pager.py --build $(BUILD)
	python3 bench/startup.py --build $(BUILD)

# The evaluation against swap-disk, zram and all-local (docs/BENCH.md, ~35-45 min, root):
# JSON in bench/results, plots in docs/img, docs/RESULTS.md.
bench-eval: build
	bash bench/run_eval.sh $(BUILD)

# Every mode once at a tiny size, outputs verified (also part of `make test`).
bench-smoke: build
	/usr/bin/python3 -m bench.harness smoke --build $(BUILD) --no-save --runs 1 --workloads mt,python \
	  --sizes mt=48,python=64 --fractions 90

# Every bench/*.py script once in its --quick form (also part of `make test`: ctest label bench).
bench-quick: build
	cd $(BUILD) && ctest -L bench --output-on-failure

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(DEB_BUILD)
