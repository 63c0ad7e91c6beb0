# Every target creates .venv when missing and installs the project from pyproject.toml into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORE := $(VENV)/.installed-core

.PHONY: demo test bench fuzz readme pack-env clean

# The core (what `make demo` runs): logtool and its own dependencies, no Spark, test or bench extras.
$(CORE): pyproject.toml logtool/store/_mapguard.c logtool/format/_kernel.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(CORE)

# Everything the tests and benchmarks use (PySpark is most of it).
$(STAMP): $(CORE)
	$(BIN)/python -m pip install --quiet -e '.[test,bench,spark]'
	touch $(STAMP)

demo: $(CORE)  # exit 4 from either: problems found, as the demo intends (its sample carries planted damage)
	$(BIN)/logtool scan fixtures/sample-logdir || test $$? -eq 4
	$(BIN)/logtool verify fixtures/sample-logdir || test $$? -eq 4
	@echo "logtool is installed in $(VENV) (not on your PATH); run it as:"
	@echo "$(BIN)/logtool --help"

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.index
	$(BIN)/python -m bench.truncate
	$(BIN)/python -m bench.dump
	$(BIN)/python -m bench.audit
	$(BIN)/python -m bench.audit_many
	$(BIN)/python -m bench.kernel

# The seeded mutation fuzzer (fuzz/): N inputs over every (file kind x target) pair; totals in
# bench/results/fuzz.{md,json}, reproducers of defects in bench/results/fuzz-crashes/.
N ?= 100000
fuzz: $(STAMP)
	N=$(N) $(BIN)/python -m bench.fuzz --n $(N)

# The packed environment for executors without logtool (README: the fleet audit's nodes).
ENV_ARCHIVE ?= dist/logtool-env.tar.gz
pack-env: $(STAMP)
	$(BIN)/python -m tools.pack_env $(ENV_ARCHIVE)

# README.md's generated parts (every --help, the findings table), from the code; a test checks them.
readme: $(CORE)
	$(BIN)/python -m tools.readme

clean:
	rm -rf $(VENV) build dist *.egg-info
