# syntax=docker/dockerfile:1
# workload-map-server image: `docker build -t workload-map-server:0.1.0 .` (see deploy/README.md).
#
# Two stages on the same slim base, pinned by digest:
#   build   - the build tools from requirements/build.txt (hash-checked) in their own venv;
#             the wheel built from this tree with them (the catalog, the Karta CRD and the
#             bundled sample inside it); a virtualenv holding exactly the runtime lock
#             (requirements/runtime.txt, --require-hashes --no-deps) and then that wheel
#             (--require-hashes with the hash of the file just built, --no-deps); `pip check`;
#             the image's SBOM (CycloneDX JSON of that virtualenv, by cyclonedx-py);
#   runtime - that virtualenv and the SBOM, run as an unprivileged user; no source tree,
#             no PYTHONPATH, no pip in the virtualenv (the base keeps its own).
# No development tool (dependency groups test/lint/release) is ever installed.
# The server listens on 0.0.0.0 only here, inside the container; its own default stays
# 127.0.0.1.
#
# The base digest is the OCI image index of python:3.11.15-slim-bookworm (all platforms) as
# published in docker-library/repo-info, repos/python/remote/3.11.15-slim-bookworm.md at
# commit 3effc3eac4f65a99767fd721667a1bf157496ba4 (the build of 5 August 2026; its linux/amd64
# manifest is sha256:77923445c077d8eb971b14b2b114a1d9cd4a87edb4c75654820ca4832ee8cb15).
# Moving to a newer build: take the new digest from that file, change it here, run
# `make release-check` (docs/release.md). CI cannot reach a registry: it builds this file
# with buildah on a stand-in base made locally (tests/deploy/test_image_build.py), passed
# as --build-arg PYTHON_IMAGE=...
ARG PYTHON_IMAGE=python:3.11.15-slim-bookworm@sha256:d29f48a31a8b408ed19272ca1e7b10ebae13b240a27e862d3d4217c528e2e0c3

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /build
COPY requirements/ ./requirements/
RUN python -m venv /opt/tools \
 && /opt/tools/bin/pip install --require-hashes --no-deps -r requirements/build.txt
COPY pyproject.toml README.md LICENSE ./
COPY server/ ./server/
COPY catalog/ ./catalog/
COPY deploy/crds/ ./deploy/crds/
# the wheel the tests install (tests/packaging), built with the locked setuptools; then the
# runtime lock and the wheel, each hash-checked, into the virtualenv the image runs
RUN /opt/tools/bin/pip wheel --no-deps --no-build-isolation -w /build/dist . \
 && python -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes --no-deps -r requirements/runtime.txt \
 && wheel="$(echo /build/dist/workload_map_server-*.whl)" \
 && echo "workload-map-server @ file://${wheel} --hash=sha256:$(sha256sum "${wheel}" | cut -d' ' -f1)" > /build/wheel.txt \
 && /opt/venv/bin/pip install --require-hashes --no-deps -r /build/wheel.txt \
 && /opt/venv/bin/pip check \
 && /opt/venv/bin/pip uninstall -q -y pip setuptools \
 && /opt/venv/bin/python -m compileall -q /opt/venv/lib \
 && mkdir -p /opt/sbom \
 && /opt/tools/bin/cyclonedx-py environment --output-reproducible --of JSON \
      --pyproject /build/pyproject.toml -o /opt/sbom/workload-map-server.cdx.json /opt/venv/bin/python
# GraphiQL's assets from the npm registry, checked against the pinned sha512 list
# (graphiql/assets.lock.json) and served by the server itself (no CDN in an air-gapped
# cluster). npm is installed in this stage only; without a registry the image still builds
# and the page falls back to the CDN (logged at start). --build-arg GRAPHIQL_ASSETS=0 skips
# this step (the CI image-build test does, to stay short): the page then uses the CDN.
ARG GRAPHIQL_ASSETS=1
COPY graphiql/fetch.py graphiql/assets.lock.json /build/graphiql/
RUN mkdir -p /opt/graphiql \
 && if [ "${GRAPHIQL_ASSETS}" = 1 ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends npm \
      && python /build/graphiql/fetch.py --out /opt/graphiql \
      && rm -rf /var/lib/apt/lists/* /root/.npm; \
    fi

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="workload-map-server" \
      org.opencontainers.image.description="One uniform view of every distributed AI workload in a Kubernetes cluster, driven by Karta definitions." \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 wmap \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin wmap \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/workload-map-server
COPY --from=build /opt/venv /opt/venv
# the SBOM of /opt/venv (CycloneDX 1.x JSON): `podman run --rm --entrypoint cat IMAGE /opt/sbom/workload-map-server.cdx.json`
COPY --from=build /opt/sbom/ /opt/sbom/
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
