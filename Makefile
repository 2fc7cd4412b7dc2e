# Two commands do everything on a fresh Debian 12 machine:
#   make demo   install dependencies, build, and profile the bundled example
#   make test   install dependencies, build, and run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test test-long demo bench clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DMEMPROF_WERROR=$(if $(CI),ON,OFF) $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
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
