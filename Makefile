# Two commands set everything up on a fresh machine: `make eval` and `make test`.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.ragsweep-installed
PIPELINE ?= pipelines/default.yaml
DATASET  ?= datasets/cuad
EVAL_ARGS ?=

.PHONY: install browser test eval sweep bench clean

# CPU torch first (a wheel on this machine's disk; a bare `torch` would pull a CUDA
# build), then the project, whose docling-slim extras avoid the CUDA torchvision.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# the HTML report test opens report.html in headless Chromium (Debian's package)
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

test: install browser
	$(PY) -m pytest

eval: install
	$(VENV)/bin/ragsweep eval --pipeline $(PIPELINE) --dataset $(DATASET) --out runs $(EVAL_ARGS)

sweep: install
	$(VENV)/bin/ragsweep sweep --pipeline $(PIPELINE) --dataset $(DATASET) --grid pipelines/sweep.yaml --out runs

bench: install
	$(PY) benchmarks/sweep_vs_server.py

clean:
	rm -rf $(VENV) .cache runs
