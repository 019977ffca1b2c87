# Two entry points, each doing its own set-up on a fresh machine:
#   make run   - install into .venv and serve (bundled sample snapshot when no cluster is configured)
#   make test  - install into .venv, lint, provide the test control plane, run the whole suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: install install-run lock release-check graphiql-assets cluster-bin browser image-tools lint run test unit bench clean

# Lock files (docs/release.md "Lock files"): every package pinned with its hashes, written by
# uv from pyproject.toml. runtime.txt = [project] dependencies (the image installs exactly
# these); dev.txt = those plus the PEP 735 dependency group `dev` (tests, lint, uv itself);
# build.txt = the group `build` (the build backend and the SBOM generator of the image).
LOCKS := requirements/runtime.txt requirements/dev.txt requirements/build.txt
PIP_LOCKED := -m pip install -q --disable-pip-version-check --require-hashes --no-deps

# The development venv: the build tools and the dev lock with --require-hashes (--no-deps:
# a lock missing a package fails here instead of pip fetching it unpinned), then the
# project itself, editable, with no dependency resolution and no isolated build env.
$(VENV)/.installed: pyproject.toml $(LOCKS)
	$(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_LOCKED) -r requirements/build.txt -r requirements/dev.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

install: $(VENV)/.installed graphiql-assets

# What `make run` needs and nothing more: the runtime lock and the project (no test or lint tools).
$(VENV)/.installed-run: pyproject.toml requirements/runtime.txt requirements/build.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_LOCKED) -r requirements/build.txt -r requirements/runtime.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

install-run: $(VENV)/.installed-run

# Regenerate the three lock files from pyproject.toml: one command, deterministic (pins
# already in a lock are kept unless pyproject.toml no longer admits them; UPGRADE=1 moves
# every pin to the newest allowed release). Resolved for every platform (--universal) and
# Python 3.11, the image's and CI's.
UV_COMPILE = $(VENV)/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command "make lock" $(if $(UPGRADE),--upgrade)
lock: $(VENV)/.installed
	$(UV_COMPILE) pyproject.toml -o requirements/runtime.txt
	$(UV_COMPILE) --group build -c requirements/runtime.txt -o requirements/build.txt
	$(UV_COMPILE) pyproject.toml --group dev -c requirements/runtime.txt -c requirements/build.txt -o requirements/dev.txt

# GraphiQL's scripts and styles, pinned in graphiql/assets.lock.json (sha512), fetched with
# npm into graphiql/assets/ (not committed) so that the server serves them itself. Never
# fails the build: without npm or a registry the page loads them from the CDN (logged).
# (fetch.py uses the standard library only: the interpreter that makes the venv runs it)
graphiql-assets:
	@$(PYTHON) graphiql/fetch.py || echo "warning: GraphiQL assets not fetched; the GraphiQL page will load them from the CDN"

# Build the wheel, the image and the chart of this tree's version and verify each locally
# (deploy/release/check.py; docs/release.md). TAG=vX.Y.Z checks the release tag; STANDIN=1
# builds the image on the local stand-in base (machines without a container registry).
release-check: install
	$(PY) deploy/release/check.py $(if $(TAG),--tag $(TAG)) $(if $(STANDIN),--standin)

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

run: install-run graphiql-assets
	$(VENV)/bin/wmap serve --host $(HOST) --port $(PORT)

# The image-build test's daemonless builder and the stand-in base's bootstrapper, from Debian's
# packages, installed when absent and when root (tests/deploy/test_image_build.py skips, saying
# why, without them)
image-tools:
	@{ command -v buildah && command -v mmdebstrap; } >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah mmdebstrap >/dev/null; } \
		|| echo "warning: buildah/mmdebstrap not installed; the image-build test will skip"

test: install lint cluster-bin browser image-tools
	$(PY) -m pytest

unit: install
	$(PY) -m pytest -m "not cluster"

# every figure, then the issue-23 targets table before (BEFORE, a revision) and after (this tree);
# BENCH_ARGS=--quick for small sizes
BEFORE ?= 37857a9
bench: install
	$(PY) -m benchmarks --before $(BEFORE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .import_linter_cache
