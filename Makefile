# The course's commands. `make demo` and `make test` set up what they need first.
SHELL := /bin/bash
# nbgrader runs `alembic` from PATH: the environment's bin/ must come first.
export PATH := $(CURDIR)/.venv/bin:$(PATH)
PY := .venv/bin/python

.PHONY: demo test quick hub mutation setup setup-test generate lab self-check slides grade watch bench lint release

demo: setup            ## set up, then grade the bundled demo class end to end
	$(PY) -m autograder demo

# The four lanes (README: Tests). Their markers are pyproject.toml's. A third worker on two
# cores gained 2 % (898 s against 919 s), not worth the timing tests' margins.
WORKERS ?= 2
test: setup-test       ## set up, then everything that guards behaviour (what CI runs, <15 min)
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup -m "not mutation and not hub"

quick: setup-test      ## no real kernel, no notebook catalogue: while you work (<3 min)
	$(PY) -m pytest -n 2 --dist loadgroup -m "not slow and not mutation and not hub" --no-kernels

hub: setup-test        ## a real JupyterHub, two courses, Chromium as students and instructor (root)
	$(PY) -m pytest -n 2 --dist loadgroup -m hub

mutation: setup-test   ## mutants, seed sweeps, forger matrices, every notebook in the browser
	$(PY) -m pytest -n 2 --dist loadgroup -m mutation

setup:
	scripts/setup

setup-test:
	scripts/setup --test

generate: setup        ## rebuild notebooks/ and solutions/ from source/
	$(PY) -m autograder generate

lab: setup             ## JupyterLab for students, on their working copy my-work/
	$(PY) -m autograder lab

release: setup          ## student edition (no answers), self-paced edition, solutions, in release/
	$(PY) -m autograder release --to release/student-edition --zip
	$(PY) -m autograder release --to release/self-paced --self-paced --zip
	$(PY) -m autograder release --to release/solutions --solutions --zip

self-check: setup      ## every notebook's visible checks, as a progress table
	$(PY) -m autograder self-check

slides: setup          ## students' slides of every lesson in slides/ (offline web pages)
	$(PY) -m autograder slides

grade: setup           ## grade everything submitted (see README: Grading)
	$(PY) -m autograder grade

watch: setup           ## grade each submission as it arrives (Ctrl-C stops)
	$(PY) -m autograder watch

bench: setup-test      ## benchmarks (ratios against peers measured in the same run)
	$(PY) benchmarks/engine_vs_micrograd.py
	$(PY) benchmarks/grading_throughput.py
	$(PY) benchmarks/sandbox_overhead.py
	$(PY) benchmarks/cpu_fairness.py
	$(PY) benchmarks/grading_dask.py
	$(PY) benchmarks/grading_on_submit.py
	$(PY) benchmarks/class_report.py
	$(PY) benchmarks/grading_profile.py
	$(PY) benchmarks/class_scale.py
	$(PY) benchmarks/hidden_regions.py
	$(PY) benchmarks/hostile_messages.py
	$(PY) benchmarks/similarity_class.py
	$(PY) benchmarks/hub_class.py

lint: setup-test
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	.venv/bin/lint-imports --no-cache
