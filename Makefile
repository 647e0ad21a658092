# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast bench coverage projects fuzz-verify release-tag clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[verify,test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m tf1gradfix.cli.demo

# (two test processes, pytest-xdist: a proof runs its two programs at once, the rest is one core each)
test: $(STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -n 2

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m "not tf and not slow and not integration"

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

# make coverage CORPUS=DIR [RUNNABLE=FILE] [COVERAGE_ARGS="--timeout 60 --json out.json"]
coverage: $(STAMP)
	@test -n "$(CORPUS)" || { echo "usage: make coverage CORPUS=DIR [RUNNABLE=FILE]" >&2; exit 2; }
	$(BIN)/python benchmarks/coverage.py "$(CORPUS)" $(if $(RUNNABLE),--runnable "$(RUNNABLE)") $(COVERAGE_ARGS)

# make projects PROJECTS=DIR [PROJECTS_ARGS="--steps 20 --only NAME --json out.json"]: DIR/projects.toml names them
projects: $(STAMP)
	@test -n "$(PROJECTS)" || { echo "usage: make projects PROJECTS=DIR (prepared projects and DIR/projects.toml)" >&2; exit 2; }
	$(BIN)/python benchmarks/projects.py "$(PROJECTS)" $(PROJECTS_ARGS)

fuzz-verify: $(STAMP)
	$(BIN)/python benchmarks/fuzz_verify.py $(FUZZ_ARGS)

# the annotated tag v<version> (setup.cfg) that the pre-commit snippets' `rev:` names
release-tag:
	$(PYTHON) scripts/release_tag.py

clean:
	rm -rf $(VENV) build dist *.egg-info
