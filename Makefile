# The two set-up commands of the README: `make book` and `make test`.
# Both create .venv/ and install the pinned requirements on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
# tools that call other tools by name (nbgrader runs alembic) find the environment's copies
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: book test browser-deps release grade benchmark clean

book: $(STAMP)                       ## build the executed book into _build/html
	$(PY) -m attention_course.book.build

test: $(STAMP) browser-deps          ## run every test (unit, pages, nbgrader pipeline, browser)
	$(PY) -m pytest $(PYTEST_ARGS)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	rm -f $(VENV)/.installed-*; touch $@

# Headless Chromium for the browser tests (Debian package; never a downloaded browser build) and
# bubblewrap, the hardened grader's sandbox.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium fonts-dejavu-core; \
	  else echo "chromium is missing: run 'sudo apt-get install chromium fonts-dejavu-core' (browser tests skip without it)"; fi; }
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get install -y -qq bubblewrap || { apt-get update -qq && apt-get install -y -qq bubblewrap; }; \
	  else echo "bubblewrap is missing: run 'sudo apt-get install bubblewrap' (the hardened grader refuses to run without it)"; fi; }

# Instructor commands (see README): regenerate the student release and the solutions of a lab.
LAB ?= lab8
release: $(STAMP)
	$(VENV)/bin/jupytext --sync source/$(LAB)/$(LAB).md
	$(VENV)/bin/nbgrader generate_assignment $(LAB) --force
	$(VENV)/bin/nbgrader generate_solution $(LAB) --force

# Hardened autograding of every submission (see book/instructors/grading.md).
ASSIGNMENT ?= lab8
grade: $(STAMP)
	$(PY) -m attention_course.grading.hardened $(ASSIGNMENT) $(GRADE_ARGS)

benchmark: $(STAMP)                  ## re-measure everything in benchmarks/results (about 30 min)
	$(PY) benchmarks/lab8_readers.py
	$(PY) benchmarks/lab8_variants.py
	$(PY) benchmarks/lab8_notebook_timing.py
	$(PY) -m attention_course.book.build && $(PY) benchmarks/figure_toolkit_cost.py
	$(PY) benchmarks/grading_throughput.py
	$(PY) benchmarks/shared_machine.py

clean:
	rm -rf _build .pytest_cache
