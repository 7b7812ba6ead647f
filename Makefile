# tcompile: `make lab` starts JupyterLab on the labs, `make test` runs every test, `make test-fast` the
# day-to-day subset (no browser, no slow marks).
# Both set up everything they need into .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.tcompile-installed

.PHONY: setup lab test test-fast bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	bash scripts/install_system_deps.sh
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# Keep a torch that is already in the venv (a user's own build); else the pinned CPU build.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

# JupyterLab refuses to run as root unless told; allow it only when we are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--ServerApp.allow_root=True)

lab: setup
	$(BIN)/jupyter lab notebooks/ $(ROOT_FLAG)

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not browser and not slow"

bench: setup
	$(BIN)/python -m bench --quick

clean:
	rm -rf $(VENV) .pytest_cache
