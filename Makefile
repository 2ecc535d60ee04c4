# Thin wrappers. Each target creates .venv if it is missing and installs what it needs.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
JB     := $(VENV)/bin/jupyter-book
ARGS   ?=

# Chapters first, then the generated front-matter pages that read the chapters' committed outputs.
CHAPTERS := $(sort $(wildcard chapters/*/*.ipynb))
GENERATED := $(sort $(wildcard book/*.ipynb))

.PHONY: help book book-strict lint test notebooks measure measure-gpu rederive bench bench-browser lab pdf clean

help:
	@echo "make book        build the website into _build/html (renders committed outputs)"
	@echo "make test        the whole test suite (what CI runs)"
	@echo "make notebooks   re-execute every chapter and generated page in place"
	@echo "make measure     run the GPU measurements and write records (needs a CUDA GPU)"
	@echo "make rederive ARGS='six-nd --set model=llama-3-405b'   re-derive a chapter"
	@echo "make bench       time every chapter's re-derivation: fast path against --notebook"
	@echo "make bench-browser  time the re-derive panel's runtime in headless Chromium"
	@echo "make lab         open the chapters in JupyterLab (copies in _build/lab; the prose follows each run)"
	@echo "make pdf         the whole book as one PDF (_build/book.pdf), offline, with Chromium"

$(VENV)/.book: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.test: $(VENV)/.book
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# The re-derive panels' runtime, after the pages: `npm ci` installs the Pyodide core package-lock.json pins,
# and utils/tools/browser_bundle.py copies it, pint's pinned wheels and the book's Python into _static/rederive,
# with the bytecode of what every first use loads, compiled by Pyodide's own interpreter under node (npm's node).
# Without npm (or the registry) it says so in one line and the pages keep their static numbers.
NPM_CI = if ! command -v npm >/dev/null; then echo "npm is not installed: the pages keep their static numbers"; \
	elif ! npm ci --no-audit --no-fund --loglevel=error; then echo "npm ci failed: the pages keep their static numbers"; fi
RUNTIME = $(NPM_CI); $(PY) -m utils.tools.browser_bundle

book: $(VENV)/.book
	$(JB) build . --builder html
	@$(RUNTIME)

# Warnings are errors: a broken reference, a missing glue key or a bad toc entry fails the build.
STRICT_BUILD = $(JB) build . --builder html -W -n --keep-going
book-strict: $(VENV)/.book
	$(STRICT_BUILD)
	@$(RUNTIME)

# `make lab` and `make pdf` each add only their own extra to the book's venv: no torch, no triton.
$(VENV)/.lab: $(VENV)/.book
	$(PY) -m pip install --quiet -e '.[lab]'
	touch $@

$(VENV)/.pdf: $(VENV)/.book
	$(PY) -m pip install --quiet -e '.[pdf]'
	touch $@

# ruff over the library, the tests and the notebooks' code (pyproject.toml holds the rules).
lint: $(VENV)/.test
	$(VENV)/bin/ruff check utils tests chapters book

# One pytest run for the tests and nbval's notebooks, so both cores stay busy to the end (two runs each left a
# core idle while their last module finished). The strict build (book-strict's two commands) runs beside it, not
# before it: alone it keeps one core busy for most of a minute. It writes its exit status to BUILD_STATUS when it
# ends; the tests that need the site wait for that file (tests/book/site_browser.py), and a failed build fails the
# target after pytest, with its log. npm ci comes first: the runtime's tests look for node_modules as they load.
BUILD_LOG := _build/book-strict.log
BUILD_STATUS := _build/book-strict.status
test: $(VENV)/.test lint
	@$(NPM_CI)
	@mkdir -p _build && rm -f $(BUILD_STATUS) $(BUILD_STATUS).part
	@( set +e; $(STRICT_BUILD) > $(BUILD_LOG) 2>&1 \
	    && $(PY) -m utils.tools.browser_bundle >> $(BUILD_LOG) 2>&1; \
	    echo $$? > $(BUILD_STATUS).part; mv $(BUILD_STATUS).part $(BUILD_STATUS) ) & \
	rc=0; BOOK_BUILD_STATUS=$(BUILD_STATUS) $(PY) -m pytest -n 2 --dist loadscope --nbval --nbval-current-env \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider tests $(CHAPTERS) $(GENERATED) || rc=$$?; \
	wait; \
	if [ "$$(cat $(BUILD_STATUS))" != 0 ]; then cat $(BUILD_LOG); echo "make test: the strict book build failed"; exit 1; fi; \
	echo "make test: the strict book build passed ($(BUILD_LOG))"; exit $$rc

notebooks: $(VENV)/.test
	$(PY) -m utils.tools.execute $(CHAPTERS) $(GENERATED)

# No venv here on purpose: the GPU machines that measure have torch and triton but no registry access,
# and the harness imports only the standard library, numpy, torch and triton.
measure:
	python3 -m utils.measure $(ARGS)

# The prepared command for a short GPU window (a tree without .git: pass BOOK_GIT_COMMIT): the
# estimate first, then every measurement, each record written as it finishes and all of them packed
# into one archive that is rewritten after each record, so whatever the window allows comes back.
OUT ?= _build/measure-gpu
measure-gpu:
	python3 -m utils.measure --estimate
	python3 -m utils.measure --out $(OUT)/measurements --archive $(OUT)/measurements.tar.gz $(ARGS)

rederive: $(VENV)/.book
	$(PY) -m utils.rederive $(ARGS)

# A benchmark, not a test: each chapter's fast path against --notebook, medians of several runs.
bench: $(VENV)/.test
	$(PY) -m utils.tools.bench $(ARGS)

# A benchmark, not a test: the re-derive panel's runtime in headless Chromium (first use, one re-derivation, bytes).
bench-browser: $(VENV)/.test
	$(PY) -m utils.tools.bench_browser $(ARGS)

# JupyterLab opens copies of the chapters whose prose shows each run's numbers (utils/tools/lab.py); a reader's
# edits stay in _build/lab. It refuses to run as root unless told; a container's root user is told.
lab: $(VENV)/.lab
	$(PY) -m utils.tools.lab
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root,) --notebook-dir=_build/lab

pdf: $(VENV)/.pdf
	$(JB) build . --builder singlehtml
	$(PY) -m utils.tools.pdf _build/book.pdf

clean:
	rm -rf _build
