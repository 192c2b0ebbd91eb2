# make demo   sets up, builds, and evaluates the example transformer with kiln-eval
# make test   sets up, builds, and runs the GoogleTest (CTest) and pytest suites, then the GoogleTests
#             again under AddressSanitizer + UndefinedBehaviorSanitizer (their own build folder)
# make sanitize  the GoogleTests under ASan + UBSan and under ThreadSanitizer, and a pytest subset with
#             torch_kiln._C built with ASan + UBSan (scripts/sanitize.sh; docs/guides/sanitizers.md)
# make bench  runs the benchmarks of bench/ (not part of the tests), each in its own process,
#             writes their JSON to bench/results/ and re-renders docs/performance.md (about 30 min;
#             run it on a quiet machine: the figures are stamped with the machine and its load)
# make performance  only re-renders docs/performance.md from the JSON in bench/results/
# make operators  runs the full OpInfo sweep and rewrites docs/reference/operators.md (slow)
# make suite  runs the model suites (bench/bench_suite.py: every model, training and inference, in
#             CPU eager, Inductor, kiln eager and kiln compiled) and re-renders docs/models.md (1-2 h)
# make models-page  only re-renders docs/models.md from bench/results/suite.json
# make fuzz-adaptive  runs FUZZ_PROGRAMS random op programs with adaptive eager off and on and compares
#             every result bit for bit (tests/python/adaptive_fuzz.py; CI runs 50)
# make fuzz   runs the differential fuzzer against the CPU (tests/python/op_fuzz.py: random ops from
#             kiln's native set, shapes, strides, dtypes and edge-case scalars, on kiln and on the CPU)
#             for FUZZ_SECONDS (default 600), or one round of FUZZ_EXAMPLES cases per op family, from
#             FUZZ_SEED; CI runs 150 derandomized cases per family (tests/python/test_op_fuzz.py)
VENV ?= $(HOME)/.cache/kiln/venv
BUILD ?= build
PYTHON := $(VENV)/bin/python
export KILN_VENV := $(VENV)
export KILN_BUILD_DIR := $(abspath $(BUILD))

.PHONY: setup demo test test-cpp test-python test-sanitized sanitize bench performance operators suite models-page fuzz-adaptive clean

setup:
	@scripts/setup.sh

demo: setup
	$(VENV)/bin/kiln-eval examples/transformer.py --output kiln-eval-reports/transformer

test: setup
	@$(MAKE) --no-print-directory test-cpp test-python test-sanitized

test-cpp:
	ctest --test-dir $(BUILD) --output-on-failure

test-python:
	$(PYTHON) -m pytest -q -n auto tests/python

test-sanitized:
	scripts/sanitize.sh gtests

sanitize: setup
	scripts/sanitize.sh all

BENCH_RESULTS ?= bench/results

bench: setup
	@mkdir -p $(BENCH_RESULTS)
	$(PYTHON) bench/bench_copies.py --json $(BENCH_RESULTS)/copies.json
	$(PYTHON) bench/bench_native_ops.py --json $(BENCH_RESULTS)/native_ops.json
	$(PYTHON) bench/bench_eager_ops.py --inductor --json $(BENCH_RESULTS)/eager_ops.json
	$(PYTHON) bench/bench_training.py --json $(BENCH_RESULTS)/training.json
	$(PYTHON) bench/bench_models.py --json $(BENCH_RESULTS)/models.json
	$(PYTHON) bench/bench_library.py --json $(BENCH_RESULTS)/library.json
	$(PYTHON) bench/bench_foreach.py --json $(BENCH_RESULTS)/foreach.json
	$(PYTHON) bench/bench_adaptive_eager.py --json $(BENCH_RESULTS)/adaptive_eager.json
	$(PYTHON) bench/bench_custom_kernels.py --json $(BENCH_RESULTS)/custom_kernels.json
	$(PYTHON) bench/bench_profiler.py --json $(BENCH_RESULTS)/profiler.json
	$(PYTHON) bench/bench_compile.py --json $(BENCH_RESULTS)/compile.json
	$(PYTHON) bench/bench_allreduce.py --json $(BENCH_RESULTS)/allreduce.json
	$(PYTHON) bench/bench_ddp.py --json $(BENCH_RESULTS)/ddp.json
	$(PYTHON) bench/bench_import.py --json $(BENCH_RESULTS)/import.json
	-$(PYTHON) bench/bench_long_run.py --json $(BENCH_RESULTS)/long_run.json  # exits 1 on drift; the page still renders
	@$(MAKE) --no-print-directory performance

# Standard library only: needs no build.
performance:
	python3 bench/render_performance.py --results $(BENCH_RESULTS) --output docs/performance.md

operators: setup
	$(PYTHON) tests/conformance/opinfo_sweep.py --dtypes float32,float16,bfloat16,int64,bool \
		--samples 4 --grad --compiled --markdown docs/reference/operators.md --json $(BUILD)/operators.json

SUITE_MODELS ?= all

suite: setup
	@mkdir -p $(BENCH_RESULTS)
	$(PYTHON) bench/bench_suite.py --models $(SUITE_MODELS) --json $(BENCH_RESULTS)/suite.json
	@$(MAKE) --no-print-directory models-page

# Standard library only: needs no build.
models-page:
	python3 bench/render_models.py --results $(BENCH_RESULTS)/suite.json --output docs/models.md

FUZZ_PROGRAMS ?= 1000
FUZZ_SEED ?= 0

fuzz-adaptive: setup
	$(PYTHON) tests/python/adaptive_fuzz.py --programs $(FUZZ_PROGRAMS) --seed $(FUZZ_SEED)

FUZZ_SECONDS ?=
FUZZ_EXAMPLES ?=

.PHONY: fuzz
fuzz: setup
	$(PYTHON) tests/python/op_fuzz.py --seed $(FUZZ_SEED) $(if $(FUZZ_SECONDS),--seconds $(FUZZ_SECONDS)) \
		$(if $(FUZZ_EXAMPLES),--examples $(FUZZ_EXAMPLES))

clean:
	rm -rf $(BUILD) build-sanitize python/torch_kiln/_C*.so
