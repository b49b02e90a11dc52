# edgebench: `make figures` reproduces the papers' experiments on this machine (or TARGET);
# `make test` checks the library against real parts. Both set themselves up on first use.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.edgebench-installed

# Parameters, e.g. `make figures PROFILE=quick TARGET=pi@raspberrypi RUNTIMES=native,docker`
PROFILE ?= standard
TARGET ?= local
RUNTIMES ?= auto
APPS ?= all
REPS ?=
ONLY ?=
# RESUME=latest goes on with a stopped `make figures` (or RESUME=<run id>); RESUME_ANYWAY=yes even
# where its parameters, code or device differ (recorded in the run).
RESUME ?=
RESUME_ANYWAY ?=
# Several devices at once: TARGET=pi1,pi2 or a fleet file naming each with its load generator.
FLEET ?=
PYTEST_ARGS ?=
# `make figures` and `make test` set their target up first (idempotent: seconds when nothing is
# missing; without root it only says what is missing). PROVISION=no uses only what is there.
PROVISION ?= yes
# `make settle`: the time it may spend measuring again, and the most repetitions a run grows to.
BUDGET ?= 2h
MAX_REPS ?= 20
# `make device NAME=debian-v2`: an emulated device (devices: `make device`); then TARGET=debian-v2.
NAME ?=
# `make lab`: where JupyterLab listens. Loopback by default; on a remote device tunnel to it (docs/manual.md).
LAB_IP ?= 127.0.0.1
LAB_PORT ?= 8888

provision_first = $(if $(filter no,$(PROVISION)),@echo "PROVISION=no: using only what $(1) has",\
	$(PY) -m edgebench.provisioning.provision --target '$(1)' --before-run $(2))

FIGURE_ARGS = --profile '$(PROFILE)' --target '$(TARGET)' --runtimes '$(RUNTIMES)' --apps '$(APPS)' \
	$(if $(REPS),--repetitions '$(REPS)') $(if $(ONLY),--only '$(ONLY)') $(if $(FLEET),--fleet '$(FLEET)') \
	$(foreach s,$(SET),--set '$(s)') \
	$(if $(RESUME),--resume '$(RESUME)') $(if $(RESUME_ANYWAY),--resume_anyway '$(RESUME_ANYWAY)') \
	$(if $(filter no,$(PROVISION)),,--provision)

.PHONY: help setup provision figures plan replot compare verdicts settle report lab test test-fast lint bench device device-stop clean

help: ## Show this help
	@echo "edgebench: make <goal> [PROFILE=quick|standard] [TARGET=local|user@host|device|a,b] [FLEET=file.yml] [RUNTIMES=auto|native,docker] [APPS=all|go-http] [REPS=N] [ONLY=name] [SET='param=value ...'] [RESUME=latest] [PROVISION=yes|no]"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: $(STAMP) ## Create .venv and install edgebench with its dependencies (quick when done)

$(STAMP): pyproject.toml constraints.txt
	@command -v go >/dev/null || { echo "Go >= 1.22 is needed to build the apps for the target (apt-get install golang)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $@

provision: setup ## Install and start what the experiments need on TARGET (CHECK=1: only show it; LOAD_GENERATOR=1: only what a load-generator host runs; PROFILE=quick: NPB's classes only as big as that profile runs)
	$(PY) -m edgebench.provisioning.provision --target '$(TARGET)' $(if $(CHECK),--check) $(if $(FOR_TESTS),--for-tests) $(if $(LOAD_GENERATOR),--load-generator) \
		$(if $(filter command line environment,$(origin PROFILE)),--profile '$(PROFILE)')

figures: setup ## Provision TARGET, run every experiment notebook headless there, render the figures (TARGET=a,b or FLEET=file: every device in parallel)
	$(PY) -m edgebench.drivers.figures $(FIGURE_ARGS)

plan: setup ## Print what `make figures` would run on TARGET and for about how long, measuring nothing (same settings)
	$(PY) -m edgebench.drivers.figures --plan-only $(filter-out --provision,$(FIGURE_ARGS))

replot: setup ## Re-render every notebook from its latest data, measuring nothing
	$(PY) -m edgebench.drivers.figures --replot $(if $(ONLY),--only '$(ONLY)')

compare: setup ## Runs side by side (devices, dates, versions) as ratios to each device's native, beside the papers' (ONLY, TARGET=a,b, RUNS=latest|all|ids)
	$(PY) -m edgebench.drivers.compare $(strip $(if $(ONLY),--experiments '$(ONLY)') $(if $(RUNS),--runs '$(RUNS)') \
		$(if $(filter command line environment,$(origin TARGET)),--targets '$(TARGET)') \
		$(if $(filter command line environment,$(origin RUNTIMES)),--runtimes '$(RUNTIMES)') \
		$(if $(filter command line environment,$(origin PROFILE)),--profile '$(PROFILE)'))

verdicts: setup ## Every claim of the papers (data/reference/claims.csv) judged on TARGET's latest runs (TARGET=a,b: a column per device), with 95% intervals, and which runtimes serve within TOLERANCE (0.05) of native: figures/verdicts/
	$(PY) -m edgebench.drivers.verdicts --target '$(TARGET)' $(if $(TOLERANCE),--tolerance '$(TOLERANCE)')

settle: setup ## Measure again, as new repetitions of the same runs, only the points each inconclusive claim needs, until decided, MAX_REPS (20) or BUDGET (2h); then make verdicts (docs/verdicts.md)
	$(call provision_first,$(TARGET))
	$(PY) -m edgebench.drivers.settle --target '$(TARGET)' --budget '$(BUDGET)' --max-reps '$(MAX_REPS)' \
		$(if $(PAPERS),--papers '$(PAPERS)') $(if $(RESUME_ANYWAY),--anyway)
	$(MAKE) --no-print-directory verdicts TARGET='$(TARGET)'

report: setup ## Static HTML site of every experiment with data, from the file system: figures/report/index.html
	$(PY) -m edgebench.drivers.report

lab: setup ## JupyterLab on notebooks/ with the project's kernel, as any user (LAB_IP, LAB_PORT; Ctrl-C stops it)
	$(call provision_first,$(TARGET))
	$(PY) -m edgebench.drivers.lab --ip '$(LAB_IP)' --port '$(LAB_PORT)'

test: setup ## Provision this machine, run the test suite (parts still missing are skipped, with the reason)
	$(call provision_first,local,--for-tests)
	$(PY) tests/run.py $(PYTEST_ARGS)

test-fast: setup ## The unit tests only (tables, figures, parsers, plans), without provisioning anything, on every core: for a change to a plot
	$(PY) -m pytest -m "not integration and not slow" -n auto -q $(PYTEST_ARGS)

lint: setup ## ruff over lib/ and tests/, vulture for dead code in lib/ (names only notebooks use: tests/dead_code_allowed.py), shellcheck of every script sent to devices
	$(VENV)/bin/ruff check lib tests
	@dead=$$($(VENV)/bin/vulture lib/edgebench tests tests/dead_code_allowed.py --min-confidence 60 | grep '^lib/' || true); \
	if [ -n "$$dead" ]; then echo "$$dead"; echo "dead code: remove it (or name what only a notebook uses in tests/dead_code_allowed.py)"; exit 1; fi
	@scripts=$$(find lib/edgebench -name '*.sh'); if [ -n "$$scripts" ]; then $(VENV)/bin/shellcheck $$scripts; fi
	@echo "lint: clean"

bench: setup ## Print the benchmarks' figures (probe lag, wrk driver overhead, IoMT throughput vs tools, open-loop stall)
	$(PY) benchmarks/probe_lag.py
	$(PY) benchmarks/wrk_driver_overhead.py
	$(PY) benchmarks/iomt_throughput.py
	$(PY) benchmarks/open_loop_stall.py

device: setup ## Build once (cached) and boot an emulated device, then TARGET=NAME works in every goal: NAME=debian-v2 (cgroup v2), pi-arm64, pi-arm64-nomemcg
	$(PY) -m edgebench.devices start '$(NAME)'

device-stop: setup ## Power off the emulated device NAME, or every running one
	$(PY) -m edgebench.devices stop $(if $(NAME),'$(NAME)')

clean: ## Remove build outputs, rendered figures and caches (keeps data/ and .venv)
	rm -rf .build .pytest_cache
	find figures -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
