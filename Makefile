# The two commands of the README.  Both create .venv from scratch when it is missing.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PORT   ?= 8000

.PHONY: run test lint docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.run-installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[fast]'
	touch $@

$(VENV)/.dev-installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

$(VENV)/.docs-installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[docs]'
	touch $@

run: $(VENV)/.run-installed  ## serve the example server over HTTP on 127.0.0.1:$(PORT)
	@echo "mcpkit is installed in $(BIN)/: in a new shell type $(BIN)/mcpkit, or 'source $(BIN)/activate' first" >&2
	$(BIN)/mcpkit serve examples/quickstart.py --http --port $(PORT)

# The suite runs on pytest-xdist workers, one test file at a time per worker (a file's tests
# stay together and in order, sharing their module fixtures).  Much of its time is spent
# waiting on processes and sockets, so a worker per core leaves the cores idle: on 2 cores
# four workers beat three and two (tests/README.md).  TEST_WORKERS=0: one process.
TEST_WORKERS ?= 4

test: $(VENV)/.dev-installed  ## the whole test suite (needs node/npm for the conformance tests)
	$(BIN)/python -m compileall -q -j 0 src tests  # once, not in each of the suite's processes
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/python tests/typecheck.py  # mypy --strict on tests/ and bench/, each file under the module name it runs as
	$(BIN)/vulture  # dead code: paths and allow-list in pyproject.toml [tool.vulture]

docs: $(VENV)/.docs-installed  ## the documentation site into site/ (docs/, mkdocs.yml); strict: a broken link or an undocumented public name fails
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(VENV)/.run-installed  ## the benchmark against the official SDK and FastMCP (bench/README.md)
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mcpkit site
