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

.PHONY: help book book-strict test notebooks measure rederive clean

help:
	@echo "make book        build the website into _build/html (renders committed outputs)"
	@echo "make test        the whole test suite (what CI runs)"
	@echo "make notebooks   re-execute every chapter and generated page in place"
	@echo "make measure     run the GPU measurements and write records (needs a CUDA GPU)"
	@echo "make rederive ARGS='six-nd --set n_params=405e9'   re-derive a chapter"

$(VENV)/.book: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.test: $(VENV)/.book
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

book: $(VENV)/.book
	$(JB) build . --builder html

# Warnings are errors: a broken reference, a missing glue key or a bad toc entry fails the build.
book-strict: $(VENV)/.book
	$(JB) build . --builder html -W -n --keep-going

test: $(VENV)/.test book-strict
	$(PY) -m pytest -n 2 --dist loadscope tests
	$(PY) -m pytest -n 2 --dist loadscope --nbval --nbval-current-env \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider $(CHAPTERS) $(GENERATED)

notebooks: $(VENV)/.test
	$(PY) -m utils.execute $(CHAPTERS) $(GENERATED)

# No venv here on purpose: the GPU machines that measure have torch and triton but no registry access,
# and the harness imports only the standard library, numpy, torch and triton.
measure:
	python3 -m utils.measure $(ARGS)

rederive: $(VENV)/.test
	$(PY) -m utils.rederive $(ARGS)

clean:
	rm -rf _build
