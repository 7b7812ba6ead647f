# tcompile: `make lab` starts JupyterLab on the labs, `make labs-student` writes their student edition, `make test` runs every test, `make test-fast` the
# day-to-day subset (no browser, no slow marks), `make test-torch TORCH_SPEC=torch==2.14.1` that subset and
# one lab on another torch, in a second venv (.venv-torch); TORCHVISION_SPEC=… adds torchvision (Mask R-CNN test).
# They set up everything they need (.venv, .venv-torch) on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.tcompile-installed

.PHONY: setup lab labs-student test test-fast test-torch bench clean

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

# The student release, made by nbgrader: notebooks/course/ is the labs as an nbgrader course (source/: solutions
# and hidden tests, the instructor's), generated from notebooks/labs/ and not committed; `nbgrader
# generate_assignment` writes release/labNN/ (starting code, visible checks, no solution, no hidden test): hand
# that out; `nbgrader autograde labNN` in notebooks/course/ grades what comes back in submitted/<student>/labNN/.
COURSE := notebooks/course
labs-student: setup
	rm -rf $(COURSE)/source $(COURSE)/release
	$(BIN)/python notebooks/build_labs.py --course $(COURSE)
	cd $(COURSE) && for lab in $$(ls source); do \
		PATH="$(abspath $(BIN)):$$PATH" "$(abspath $(BIN))/nbgrader" generate_assignment $$lab --force || exit 1; done

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not browser and not slow"

# Another torch, without touching .venv: .venv-torch gets TORCH_SPEC (rebuilt when TORCH_SPEC changes) and
# the project with its test extras; then the fast suite (less the any_torch tests, which compile nothing and read
# only saved files: make test runs them, and no torch changes their result) and one lab run on it. TORCH_LAB: the quickest lab
# that compiles live (02, ~15 s on 2 cores; 06 takes 9 s but without CUDA it only reads shipped captures).
TORCH_VENV := .venv-torch
TORCH_BIN := $(TORCH_VENV)/bin
TORCH_LAB ?= 02_graph_breaks
# A torchvision built for TORCH_SPEC (e.g. torchvision==0.29.1 for torch==2.14.1): tests/test_maskrcnn.py then
# captures torchvision's Mask R-CNN (it skips without torchvision; PyPI has no CPU torchvision for the pinned CPU torch)
TORCHVISION_SPEC ?=

test-torch:
	bash scripts/install_system_deps.sh
	if [ "$$(cat $(TORCH_VENV)/.torch-spec 2>/dev/null)" != "$(TORCH_SPEC)" ]; then \
		rm -rf $(TORCH_VENV) && $(PY) -m venv $(TORCH_VENV) && \
		$(TORCH_BIN)/python -m pip install -q --upgrade pip && \
		$(TORCH_BIN)/python -m pip install -q "$(TORCH_SPEC)" && \
		echo "$(TORCH_SPEC)" > $(TORCH_VENV)/.torch-spec; fi
	$(TORCH_BIN)/python -m pip install -q -e ".[test]"
	$(if $(TORCHVISION_SPEC),$(TORCH_BIN)/python -m pip install -q "$(TORCHVISION_SPEC)")
	$(TORCH_BIN)/python -c "import torch; print('test-torch: torch', torch.__version__)"
	$(TORCH_BIN)/python -m pytest -q -m "not browser and not slow and not any_torch"
	$(TORCH_BIN)/python -m pytest -q "tests/test_labs.py::test_lab_runs_top_to_bottom[$(TORCH_LAB)]"

bench: setup
	$(BIN)/python -m bench --quick

clean:
	rm -rf $(VENV) $(TORCH_VENV) .pytest_cache
