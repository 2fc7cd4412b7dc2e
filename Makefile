# Two commands do everything on a fresh Debian 12 machine:
#   make demo   install dependencies, build, and profile the bundled example
#   make test   install dependencies, build, and run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# Profile-guided optimization of the heap analyzer (cmake/profile_guided.cmake): a profiling
# build of the CLI in $(BUILD)/pgo/tree runs on a training heap (scripts/pgo-train), and the
# real build compiles the analyzer with that profile. PGO=0 builds without it.
PGO ?= 1
PGO_DATA := $(abspath $(BUILD))/pgo/data
# Both trees get the same options, so that the profile matches the code it describes.
CONFIGURE_FLAGS = -DMEMPROF_WERROR=$(if $(CI),ON,OFF) $(CMAKE_FLAGS)

.PHONY: all deps configure build test test-long demo bench clean

all: build

deps:
	@scripts/install-deps

ifeq ($(PGO),1)
$(BUILD)/CMakeCache.txt: $(PGO_DATA)/trained
endif

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CONFIGURE_FLAGS) -DMEMPROF_PROFILE_USE=$(if $(filter 1,$(PGO)),$(PGO_DATA))

# Trained again when the analyzer's code or the training changes; the real build then
# recompiles the analyzer (its objects depend on the `trained` stamp).
$(PGO_DATA)/trained: $(wildcard src/heap/* src/report/* src/core/util/* scripts/pgo-train scripts/pgo/*) | deps
	cmake -S . -B $(BUILD)/pgo/tree $(CONFIGURE_FLAGS) -DMEMPROF_FUZZERS=OFF -DMEMPROF_PROFILE_GENERATE=$(PGO_DATA)
	cmake --build $(BUILD)/pgo/tree --target memprof -j $(JOBS)
	scripts/pgo-train $(BUILD)/pgo/tree/memprof $(PGO_DATA)

configure: $(BUILD)/CMakeCache.txt

build: deps configure $(if $(filter 1,$(PGO)),$(PGO_DATA)/trained)
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE long

# The long variants (label "long": 1,000 attach/detach cycles).
test-long: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L long

demo: build
	@scripts/demo

bench: build
	@scripts/bench

clean:
	rm -rf $(BUILD)
