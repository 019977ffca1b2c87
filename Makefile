# Two entry points, each doing its own set-up on a fresh machine:
#   make run   - install into .venv and serve (bundled sample snapshot when no cluster is configured)
#   make test  - install into .venv, lint, provide the test control plane, run the whole suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: install install-test graphiql-assets cluster-bin browser lint run test unit bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed graphiql-assets

# GraphiQL's scripts and styles, pinned in graphiql/assets.lock.json (sha512), fetched with
# npm into graphiql/assets/ (not committed) so that the server serves them itself. Never
# fails the build: without npm or a registry the page loads them from the CDN (logged).
graphiql-assets: $(VENV)/.installed
	@$(PY) graphiql/fetch.py || echo "warning: GraphiQL assets not fetched; the GraphiQL page will load them from the CDN"

# kube-apiserver + etcd for the real-cluster tests and helm for the chart tests, built once
# per machine from the Go module proxy into ~/.cache/workload-map-server (reused afterwards)
cluster-bin:
	bash tests/cluster/build.sh
	bash tests/deploy/build-helm.sh

# Debian's chromium for the browser tests (tests/ui, driven by Playwright with its executable
# path; no browser is downloaded): installed once when absent; without it those tests skip.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
		|| echo "warning: chromium not installed; the browser tests (tests/ui) will skip"

# Static checks, run before the tests by `make test` (and so by .ci/run): ruff (pyflakes,
# pycodestyle errors, Google-style docstrings), mypy --strict on server/workload_map, the
# import-linter layer contracts, deptry (every import declared as a dependency; all four
# configured in pyproject.toml) and the drift check of the published contracts in schema/.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/deptry .
	$(PY) -m workload_map.contracts --check

run: install
	$(VENV)/bin/wmap serve --host $(HOST) --port $(PORT)

test: install lint cluster-bin browser
	$(PY) -m pytest

unit: install
	$(PY) -m pytest -m "not cluster"

bench: install
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .import_linter_cache
