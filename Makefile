# A fresh machine needs only Python 3.10+ and make: every target creates .venv and installs into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
NOTEBOOKS := $(wildcard notebooks/*.ipynb)
# jlpm and jupyter-builder live in the virtual environment; node is on the machine.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
LAB_BUILT := ipy_gpuguard/labextension/package.json
LAB_SOURCES := $(wildcard labextension/src/*.ts labextension/style/*) labextension/package.json labextension/yarn.lock

.PHONY: demo test stacks chromium lint lab bench clean

$(VENV)/.installed: setup.py pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# An editable install does not install data files: enable the server extension by hand.
	mkdir -p $(VENV)/etc/jupyter/jupyter_server_config.d
	cp jupyter-config/jupyter_server_config.d/ipy_gpuguard.json $(VENV)/etc/jupyter/jupyter_server_config.d/
	$(MAKE) $(LAB_BUILT)
	# ... nor the lab extension: link the built one for development.
	$(VENV)/bin/jupyter labextension develop --overwrite .
	touch $@

## Build the lab extension (TypeScript) into ipy_gpuguard/labextension.
$(LAB_BUILT): $(LAB_SOURCES)
	cd labextension && jlpm install --immutable && jlpm build:prod

## Run the demo notebooks headless (a simulated 8 GiB GPU where there is no real one) into build/notebooks/.
demo: $(VENV)/.installed $(LAB_BUILT)
	$(PY) notebooks/execute.py build/notebooks notebooks/doctor.ipynb notebooks/quickstart.ipynb notebooks/oom_recovery.ipynb notebooks/hang_watchdog.ipynb

## Run the tests (the GPU-only ones run with `pytest -m gpu` on a machine with a GPU): the lab
## extension's pure TypeScript (node's test runner), then the Python, kernel and browser tests.
test: $(VENV)/.installed $(LAB_BUILT) chromium
	cd labextension && jlpm test
	$(PY) -m pytest

## Debian's Chromium for the browser tests (Playwright cannot download its own browser here),
## installed where this user can (root, or sudo); elsewhere the browser tests say what to install.
chromium:
	@command -v $${GPUGUARD_CHROMIUM:-chromium} >/dev/null || { \
	  sudo=$$(command -v sudo || true); \
	  $$sudo apt-get install -y -q chromium fonts-dejavu-core \
	  || { $$sudo apt-get update -q && $$sudo apt-get install -y -q chromium fonts-dejavu-core; } \
	  || echo "make: could not install Chromium; the browser tests need it (apt-get install chromium)"; }

## The stacks our users train on, each in a venv of its own under build/stacks, in a real kernel.
stacks: $(VENV)/.installed $(LAB_BUILT)
	$(PY) -m pytest -m stack tests/stacks

## Lint and type-check: ruff and mypy, and eslint and prettier on the lab extension.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check ipy_gpuguard tests bench notebooks
	$(VENV)/bin/ruff format --check ipy_gpuguard tests bench notebooks
	$(VENV)/bin/mypy
	cd labextension && jlpm lint:check

## Build the lab extension, install it for development, and open the demo notebooks in JupyterLab
## (a simulated 8 GiB GPU where NVML finds none).
lab: $(VENV)/.installed $(LAB_BUILT)
	GPUGUARD_SIMULATE=$${GPUGUARD_SIMULATE-8GiB} $(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

## Measure the guard's overhead, the batch search, the watchdog, the doctor and the server's meter
## (figures side by side).
bench: $(VENV)/.installed
	$(PY) bench/overhead.py
	$(PY) bench/batch_search.py
	$(PY) bench/find_max.py
	$(PY) bench/watchdog.py
	$(PY) bench/doctor.py
	$(PY) bench/native_log.py
	$(PY) bench/diagnose.py
	$(PY) bench/server_meter.py

clean:
	rm -rf $(VENV) build *.egg-info ipy_gpuguard/labextension labextension/lib labextension/lib-test labextension/node_modules
