# syntax=docker/dockerfile:1
# workload-map-server image: `docker build -t workload-map-server:0.1.0 .` (see deploy/README.md).
#
# Two stages on the same pinned slim base:
#   build   - a virtualenv with the runtime dependencies only (pyproject's [project]
#             dependencies; the [test] extra is never installed);
#   runtime - that virtualenv plus the application tree (server/ with the bundled sample,
#             schema/, catalog/) under /app, run as an unprivileged user.
# The server listens on 0.0.0.0 only here, inside the container; its own default stays
# 127.0.0.1. Pin by digest too (python:3.11.15-slim-bookworm@sha256:...) for reproducible builds.
ARG PYTHON_IMAGE=python:3.11.15-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /build
COPY pyproject.toml ./
# The runtime requirements are read from pyproject.toml ([project] dependencies) so they are
# never duplicated; optional extras (tests) are left out on purpose.
RUN python -m venv /opt/venv \
 && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
      > requirements.txt \
 && /opt/venv/bin/pip install -r requirements.txt \
 && /opt/venv/bin/pip uninstall -y pip setuptools wheel \
 && printf '%s\n' '#!/opt/venv/bin/python' 'import sys' 'from workload_map.cli.main import main' 'sys.exit(main())' \
      > /opt/venv/bin/wmap \
 && chmod 0755 /opt/venv/bin/wmap
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
WORKDIR /app
COPY server/ /app/server/
COPY schema/ /app/schema/
COPY catalog/ /app/catalog/
COPY deploy/crds/ /app/deploy/crds/
COPY --from=build /opt/graphiql/ /app/graphiql/assets/
# bytecode compiled at build time: the root filesystem is read-only in the cluster
RUN ln -s server /app/workload_map \
 && ln -s schema /app/workload_map_schema \
 && python -m compileall -q /app/server /app/schema
# /app is the application root: server/config.py finds catalog/ and server/sample/ relative to
# it; the WMAP_* paths below say so explicitly.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    WMAP_CATALOG_DIR=/app/catalog \
    WMAP_SAMPLE_DIR=/app/server/sample \
    WMAP_GRAPHIQL_ASSETS=/app/graphiql/assets \
    WMAP_STATE_DIR=/var/lib/workload-map-server \
    WMAP_PORT=8080
USER 10001:10001
EXPOSE 8080
# python, not curl (slim has none): exit 0 only for a 200 from /livez
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('WMAP_PORT', '8080') + '/livez', timeout=4).status == 200 else 1)"]
ENTRYPOINT ["wmap", "serve", "--host", "0.0.0.0"]
