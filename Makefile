# Two entry points, each doing its own set-up on a fresh machine:
#   make run   - install into .venv and serve (bundled sample snapshot when no cluster is configured)
#   make test  - install into .venv, lint, provide the test control plane, run the whole suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: install install-test graphiql-assets cluster-bin lint run test unit bench clean

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

# only what running needs: the package and its runtime dependencies (no test extras)
run:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	@$(PY) graphiql/fetch.py || echo "warning: GraphiQL assets not fetched; the GraphiQL page will load them from the CDN"
	$(VENV)/bin/wmap serve --host $(HOST) --port $(PORT)

test: install lint cluster-bin
	$(PY) -m pytest

unit: install
	$(PY) -m pytest -m "not cluster"

bench: install
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .import_linter_cache
