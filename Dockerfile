# syntax=docker/dockerfile:1
# workload-map-server image: `docker build -t workload-map-server:0.1.0 .` (see deploy/README.md).
#
# Two stages on the same pinned slim base:
#   build   - the package built from this tree (the wheel, with the catalog, the Karta CRD
#             and the bundled sample inside it) installed into a virtualenv with its runtime
#             dependencies only (the [test] extra is never installed);
#   runtime - that virtualenv, run as an unprivileged user; no source tree, no PYTHONPATH.
# The server listens on 0.0.0.0 only here, inside the container; its own default stays
# 127.0.0.1. Pin by digest too (python:3.11.15-slim-bookworm@sha256:...) for reproducible builds.
ARG PYTHON_IMAGE=python:3.11.15-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /build
COPY pyproject.toml README.md LICENSE ./
COPY server/ ./server/
COPY catalog/ ./catalog/
COPY deploy/crds/ ./deploy/crds/
# the wheel the tests install (tests/packaging), then its runtime dependencies from pyproject
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip wheel --no-deps -w /build/dist . \
 && /opt/venv/bin/pip install /build/dist/*.whl \
 && /opt/venv/bin/python -m compileall -q /opt/venv/lib \
 && /opt/venv/bin/pip uninstall -y pip setuptools wheel
# GraphiQL's assets from the npm registry, checked against the pinned sha512 list
# (graphiql/assets.lock.json) and served by the server itself (no CDN in an air-gapped
# cluster). npm is installed in this stage only; without a registry the image still builds
# and the page falls back to the CDN (logged at start).
COPY graphiql/fetch.py graphiql/assets.lock.json /build/graphiql/
RUN apt-get update \
 && apt-get install -y --no-install-recommends npm \
 && python /build/graphiql/fetch.py --out /opt/graphiql \
 && rm -rf /var/lib/apt/lists/* /root/.npm

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="workload-map-server" \
      org.opencontainers.image.description="One uniform view of every distributed AI workload in a Kubernetes cluster, driven by Karta definitions." \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 wmap \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin wmap \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/workload-map-server
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/graphiql/ /opt/graphiql/
# bytecode was compiled in the build stage: the root filesystem is read-only in the cluster
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    WMAP_GRAPHIQL_ASSETS=/opt/graphiql \
    WMAP_STATE_DIR=/var/lib/workload-map-server \
    WMAP_PORT=8080
USER 10001:10001
EXPOSE 8080
# python, not curl (slim has none): exit 0 only for a 200 from /livez
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('WMAP_PORT', '8080') + '/livez', timeout=4).status == 200 else 1)"]
ENTRYPOINT ["wmap", "serve", "--host", "0.0.0.0"]
