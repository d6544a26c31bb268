# The two set-up commands of the README: `make book` and `make test`.
# Both create .venv/ and install the pinned requirements on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
# tools that call other tools by name (nbgrader runs alembic) find the environment's copies
export PATH := $(abspath $(VENV))/bin:$(PATH)

# A target's prerequisites are made two at a time: the Python packages install while apt-get and
# npm fetch theirs (on a fresh machine, make test's installs took 88 s one after another, 56 to
# 76 s side by side). A recipe's own commands still run in turn.
MAKEFLAGS += --jobs=2

.PHONY: book test browser-deps release edition grade hub hub-deps hub-env hub-remove-demo wheel benchmark clean

# the pinned npm packages: the book's front-end assets and the tests' axe-core, and the hub's proxy
BOOK_NPM := offline/node_modules/.package-lock.json
HUB_NPM  := deploy/hub/node_modules/.package-lock.json

book: $(STAMP) browser-deps $(BOOK_NPM)  ## build the executed book (and its PDF) into _build/html
	$(PY) -m attention_course_instructor.book.build

# Every test file runs whole on one of PYTEST_JOBS workers (pytest-xdist), longest files first
# (tests/conftest.py); PYTEST_JOBS=0 runs them in this process, one after another. Two workers on
# CI's 2 cores: the suite is bound by the CPU (with 3 workers both cores were busy 98% of a
# clean-clone run, and it took 2081 s against 1917 s with 2).
PYTEST_JOBS ?= 2
test: $(STAMP) browser-deps $(BOOK_NPM) $(HUB_NPM)  ## run every test (unit, pages, nbgrader pipeline, browser)
	MAKEFLAGS= $(PY) -m pytest -n $(PYTEST_JOBS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# .venv/ is installed again when the pins or either package's metadata change (the version
# file too: an editable install records the version in its metadata). Each install leaves it
# holding the pins and nothing else (beside pip and the course's own packages): pip removes
# nothing, so every package no pin names is uninstalled -- one the pins dropped, and a tool
# installed there by hand (keep those elsewhere, e.g. with pipx). pip would
# compile what it installs on one core (65 s in all here); compileall uses every core (55 s). A
# file only a newer Python reads (torch has one) is left uncompiled, as pip leaves it.
$(STAMP): requirements.txt pyproject.toml instructor/pyproject.toml instructor/requirements-citation.txt \
          attention_course/_version.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -r requirements.txt
	$(PY) deploy/hub/user_env.py --prune
	$(PY) -m compileall -qq -j 0 $(VENV)/lib || echo "compileall: a file for a newer Python left uncompiled"
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e . -e instructor
	rm -rf $(VENV)/cffconvert
	$(PY) -m pip install --quiet --no-deps --target $(VENV)/cffconvert -r instructor/requirements-citation.txt
	rm -f $(VENV)/.installed-*; touch $@

# Headless Chromium for the browser tests (Debian package; never a downloaded browser build),
# the PDF edition's book typeface (Charis SIL) and poppler's tools (its test lists the PDF's images),
# bubblewrap, the hardened grader's sandbox, and patchelf (the hub's user environment, make hub-env):
# what is missing is installed in one apt-get run (as root), else named with what goes without it.
browser-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium fonts-dejavu-core"; \
	[ -f /usr/share/fonts/truetype/charis/CharisSIL-Regular.ttf ] || missing="$$missing fonts-sil-charis"; \
	command -v pdfimages >/dev/null 2>&1 || missing="$$missing poppler-utils"; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v patchelf >/dev/null 2>&1 || missing="$$missing patchelf"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; exit; fi; \
	echo "missing:$$missing; run 'sudo apt-get install$$missing'. Without chromium the browser tests"; \
	echo "skip; without fonts-sil-charis the PDF falls back to another serif; without bubblewrap the"; \
	echo "hardened grader refuses to run; without patchelf the course hub's user environment cannot be built"

# npm ci as the book build and the hub tests would run it, but beside pip's install (without npm
# they say so later, where it is needed)
$(BOOK_NPM): offline/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: the book build needs it (apt-get install nodejs npm)"; exit 0; }
	cd offline && npm ci --no-audit --no-fund --silent --ignore-scripts
$(HUB_NPM): deploy/hub/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: the course hub's proxy needs it (apt-get install nodejs npm)"; exit 0; }
	cd deploy/hub && npm ci --no-audit --no-fund --silent

# Instructor commands (see README): regenerate the student release and the solutions of a lab
# (the course version, attention_course/_version.py, is stamped into the lab's install cell).
LAB ?= lab8
release: $(STAMP)                    ## LAB=lab8 or LAB=lab12
	$(VENV)/bin/jupytext --sync source/$(LAB)/$(LAB).md
	$(VENV)/bin/nbgrader generate_assignment $(LAB) --force
	$(VENV)/bin/nbgrader generate_solution $(LAB) --force

# The student edition (CONTRIBUTING.md): the public repository's contents, written to $(EDITION)
# (a clone of the student repository keeps its history and every wheel published before). It
# refuses to go on where a version CHANGELOG.md names has no wheel there; AFRESH=1 starts a new
# student repository with this version's wheel only. Like the book, it prints its PDF with
# Chromium; its scan for answers reads the PDF with poppler's pdftotext (browser-deps).
EDITION ?= _build/edition
edition: $(STAMP) browser-deps
	$(PY) -m attention_course_instructor.book.edition --out $(EDITION) $(if $(AFRESH),--afresh)

# Hardened autograding of every submission of each lab (see book/instructors/grading.md).
ASSIGNMENT ?= lab8 lab12
grade: $(STAMP)
	$(PY) -m attention_course_instructor.grading.hardened $(ASSIGNMENT) $(GRADE_ARGS)

# The course hub on this machine (see the guide, book/instructors/course-hub.md; run as root). For
# trying it out it makes the demo accounts of deploy/hub/roster.json and one shared password, kept
# in the hub's state; production: edit the roster, COURSE_HUB_AUTH=pam (the accounts' own
# passwords), COURSE_HUB_IP=0.0.0.0 behind TLS. Every setting is an environment variable read by
# deploy/hub/jupyterhub_config.py (COURSE_HUB_PORT, COURSE_HUB_STATE, COURSE_ROSTER, ...).
HUB_PREFIX ?= /opt/attention-course
COURSE_HUB_AUTH ?= shared-password
hub hub-remove-demo: export COURSE_HUB_AUTH := $(COURSE_HUB_AUTH)
hub hub-remove-demo: export COURSE_USER_ENV := $(HUB_PREFIX)/env
hub-deps:                            ## what the hub machine needs from Debian (no browser)
	@command -v bwrap >/dev/null 2>&1 && command -v patchelf >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap patchelf >/dev/null; \
	  else echo "bubblewrap and patchelf are missing: run it as root (the hub makes system accounts)" >&2; exit 1; fi; }
hub-env: $(STAMP) hub-deps $(HUB_NPM)  ## the environment every hub user's server runs in
	@test -x deploy/hub/node_modules/.bin/configurable-http-proxy || { \
	  echo "the hub's proxy is missing: install npm (apt-get install nodejs npm) and rerun" >&2; exit 1; }
	@echo "building the course environment in $(HUB_PREFIX)/env (the first time takes a minute or more) ..."
	$(PY) deploy/hub/user_env.py --prefix $(HUB_PREFIX)
hub: hub-env                         ## start the course hub (Ctrl-C stops it)
	$(PY) deploy/hub/course.py start $(if $(filter shared-password,$(COURSE_HUB_AUTH)),--create-users)
hub-remove-demo:                     ## remove the demo's accounts, its hub data, exchange and submissions
	$(PY) deploy/hub/course.py remove-users --data

# The two wheels into dist/: the student package (students install it where there is no
# repository: Colab, a laptop) and the instructor package (the grader, the book's build).
wheel: $(STAMP)
	$(PY) -c 'from pathlib import Path; from attention_course_instructor.book.build import ROOT, build_wheel; \
	  [print(build_wheel(p, Path("dist"))) for p in (ROOT, ROOT / "instructor")]'

benchmark: $(STAMP)                  ## re-measure everything in benchmarks/results (about 60 min)
	$(PY) -m benchmarks.lab8_readers
	$(PY) -m benchmarks.lab8_maps
	$(PY) -m benchmarks.lab8_variants
	$(PY) -m benchmarks.lab8_notebook_timing
	$(PY) -m benchmarks.lab12
	$(PY) -m benchmarks.lab12_variants
	$(PY) -m benchmarks.lab12_ngrams
	$(PY) -m attention_course_instructor.book.build && $(PY) -m benchmarks.figure_toolkit_cost
	$(PY) -m benchmarks.grading_throughput
	$(PY) -m benchmarks.shared_machine
	$(PY) -m benchmarks.dask_grading
	$(PY) -m benchmarks.hub_capacity                 # as root: it makes accounts
	$(PY) -m benchmarks.hub_env_build                # as root, as make hub-env

clean:
	rm -rf _build .pytest_cache
