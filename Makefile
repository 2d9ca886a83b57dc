# pixelrl: `make demo` and `make test` set themselves up on first use (idempotent).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.pixelrl-installed
# The test oracle for the nav envs (tests/envs/test_habitat_oracle.py), without its dependencies:
# the test extra has the ones it needs; see pyproject.toml for why not the others.
HABITAT_LAB ?= habitat-lab>=0.3,<0.4

.PHONY: demo test bench lint setup system-deps clean

setup: $(STAMP) system-deps

# The virtual environment with pixelrl and every extra the tests use; redone when pyproject changes.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all]'
	$(PY) -m pip install --quiet --no-deps '$(HABITAT_LAB)'
	@touch $(STAMP)

# System packages the tests drive for real (Xvfb, xdotool, Chromium + driver, Tk, x11-apps);
# a quick check when they are all there.
system-deps:
	@bash scripts/install_system_deps.sh

demo: setup
	$(PY) -m pixelrl demo

# From a scratch folder, not the repository root: there the folders on disk (envs/, vision/, ...)
# would import by their bare names and could hide an install that lacks pixelrl.envs.
# Two workers, each test file on one of them (its module fixtures built once): on the 2-core
# machine one pytest process kept ~0.9 of the two cores busy (the rest waiting on browsers, X
# servers and subprocesses). TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= 2
test: setup
	cd "$$(mktemp -d)" && HF_HUB_OFFLINE=1 $(abspath $(VENV))/bin/pytest -q --durations=15 \
		-n $(TEST_WORKERS) --dist loadfile $(CURDIR)/tests

bench: setup
	@for f in bench/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
