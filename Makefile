# make demo   sets up, builds, and evaluates the example transformer with kiln-eval
# make test   sets up, builds, and runs the GoogleTest (CTest) and pytest suites
# make bench  runs the benchmarks of bench/ (not part of the tests)
# make operators  runs the full OpInfo sweep and rewrites docs/reference/operators.md (slow)
VENV ?= $(HOME)/.cache/kiln/venv
BUILD ?= build
PYTHON := $(VENV)/bin/python
export KILN_VENV := $(VENV)
export KILN_BUILD_DIR := $(abspath $(BUILD))

.PHONY: setup demo test test-cpp test-python bench operators clean

setup:
	@scripts/setup.sh

demo: setup
	$(VENV)/bin/kiln-eval examples/transformer.py --output kiln-eval-reports/transformer

test: setup
	@$(MAKE) --no-print-directory test-cpp test-python

test-cpp:
	ctest --test-dir $(BUILD) --output-on-failure

test-python:
	$(PYTHON) -m pytest -q -n auto tests/python

bench: setup
	$(PYTHON) bench/bench_copies.py
	$(PYTHON) bench/bench_native_ops.py
	$(PYTHON) bench/bench_eager_ops.py
	$(PYTHON) bench/bench_training.py
	$(PYTHON) bench/bench_foreach.py

operators: setup
	$(PYTHON) tests/conformance/opinfo_sweep.py --dtypes float32,float16,bfloat16,int64,bool \
		--samples 4 --grad --markdown docs/reference/operators.md --json $(BUILD)/operators.json

clean:
	rm -rf $(BUILD) python/torch_kiln/_C*.so
