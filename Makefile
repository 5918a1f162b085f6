# make run   — set everything up, then run probesim on its built-in examples
# make test  — set everything up, then lint, type-check and run the tests
VENV  := .venv
BIN   := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup browser run test lint bench docs clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/bootstrap.sh scripts/prometheus.sh $(wildcard src/probesim/engine/kernels*.py)
	@scripts/bootstrap.sh $(VENV)
	$(BIN)/python -m pip install -q -e '.[dev,lab]'
	@# Debian's Prometheus server, unpacked into the venv (lab --prometheus and its tests).
	@scripts/prometheus.sh $(VENV)
	@# The capacity model's kernels compiled into numba's cache once (seconds), not in a user's run.
	@$(BIN)/python -m probesim.kernel_cache || echo "setup: kernels not compiled; the numpy forms run"
	@touch $(STAMP)

run: setup
	$(BIN)/probesim demo
	$(BIN)/probesim run seed000-slow-start-killed

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# Debian's chromium and chromium-driver for the HTML report's browser test, when missing.
browser:
	@scripts/browser.sh

# Two workers: the lab's real-time tests in one (one after another), the rest shared.
test: lint browser
	$(BIN)/pytest -n 2 --dist loadgroup --durations=25

docs: setup
	$(BIN)/python -c "from probesim.analysis.rules import rules_markdown as m; open('docs/rules.md', 'w').write(m())"

bench: setup
	$(BIN)/python benchmarks/engine.py
	$(BIN)/python benchmarks/capacity.py
	$(BIN)/python benchmarks/answers.py
	$(BIN)/python benchmarks/check.py
	$(BIN)/python benchmarks/diff.py
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/events.py
	$(BIN)/python benchmarks/sweep.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
