# Every target creates .venv when missing and installs the project from pyproject.toml into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml logtool/store/_mapguard.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench,spark]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/logtool scan fixtures/sample-logdir
	$(BIN)/logtool verify fixtures/sample-logdir || test $$? -eq 4  # 4: problems found, as the demo intends

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.index
	$(BIN)/python -m bench.truncate
	$(BIN)/python -m bench.dump
	$(BIN)/python -m bench.audit

clean:
	rm -rf $(VENV) build *.egg-info
