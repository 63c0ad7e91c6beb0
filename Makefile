# Every target creates .venv when missing and installs the project from pyproject.toml into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORE := $(VENV)/.installed-core

.PHONY: demo check test lint docs bench fuzz readme pack-env clean

# The core (what `make demo` runs): logtool and its own dependencies, no Spark, test or bench extras.
$(CORE): pyproject.toml logtool/store/_mapguard.c logtool/store/_dirread.c logtool/format/_kernel.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	# An editable install skips the man pages (data files): link each where man-db looks beside bin/ (each
	# page, not the directory, so that no other package's pages are ever written into docs/man).
	for d in man1 man7; do mkdir -p $(VENV)/share/man/$$d && ln -sf $(CURDIR)/docs/man/$$d/*.* $(VENV)/share/man/$$d/; done
	touch $(CORE)

# Everything the tests, benchmarks and docs use (PySpark is most of it).
$(STAMP): $(CORE)
	$(BIN)/python -m pip install --quiet -e '.[test,bench,spark,docs]'
	touch $(STAMP)

demo: $(CORE)  # exit 4 from either: problems found, as the demo intends (its sample carries planted damage)
	$(BIN)/logtool scan fixtures/sample-logdir || test $$? -eq 4
	$(BIN)/logtool verify fixtures/sample-logdir || test $$? -eq 4
	@echo "logtool is installed in $(VENV) (not on your PATH); run it as:"
	@echo "$(BIN)/logtool --help"

# The test tiers (tests/conftest.py's markers). `make check`, before each commit: what needs no Spark, no fault
# injection and no root (unless run as root), and only a sample of the big parametrized suites; under two
# minutes. `make test` (CI): everything. Extra pytest arguments: make check PYTEST_ARGS='-x -k dump'.
FAST := not slow and not spark and not cluster and not crash$(if $(filter 0,$(shell id -u)),, and not root)
PYTEST_ARGS ?=
# Test files run on TEST_JOBS workers at once (pytest-xdist), each file whole on one worker, in the order
# tests/conftest.py gives them: CI's whole suite takes under 30 minutes on two cores. TEST_JOBS=0: one process.
TEST_JOBS ?= 2
XDIST := -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

check: $(STAMP)
	$(BIN)/python -m pytest -m "$(FAST)" $(XDIST) $(PYTEST_ARGS)

test: $(STAMP) lint
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# Types (mypy, configured in pyproject.toml: strict for format/, store/, recovery/) and lint (ruff): part of
# `make test`, so CI holds them; quick enough to run before each commit beside `make check`.
lint: $(STAMP)
	$(BIN)/ruff check logtool tools bench fuzz fixtures tests
	$(BIN)/mypy

# The site, strictly (a warning fails it), into build/docs/html; the man pages in docs/man first, from the code.
docs: $(STAMP)
	$(BIN)/python -m tools.man
	$(BIN)/python -m sphinx -W --keep-going -n -b html docs build/docs/html

bench: $(STAMP)
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.index
	$(BIN)/python -m bench.truncate
	$(BIN)/python -m bench.dump
	$(BIN)/python -m bench.audit
	$(BIN)/python -m bench.audit_many
	$(BIN)/python -m bench.kernel
	$(BIN)/python -m bench.small
	$(BIN)/python -m bench.metadata

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
readme: $(STAMP)  # its examples run on scenarios written with kafka-python (a test extra)
	$(BIN)/python -m tools.readme

clean:
	rm -rf $(VENV) build dist *.egg-info
