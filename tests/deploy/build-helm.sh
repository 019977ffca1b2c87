#!/usr/bin/env bash
# Provide the helm binary for the chart tests (tests/deploy).
#
# Order:
#   1. WMAP_HELM set and runnable -> nothing to do.
#   2. Cache hit: ${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/helm-<version>/helm runs and
#      reports the pinned version -> nothing to do.
#   3. Build from the Go module proxy with `go install helm.sh/helm/v3/cmd/helm@<version>` (helm's
#      go.mod has no replace directives, so the module-mode install works), GOBIN into a staging
#      dir under the cache dir, then moved into place. Serialized with flock; idempotent.
#      The ldflags are the ones helm's own Makefile sets: the version string, and the Kubernetes
#      version that `helm template`/`helm lint` assume (derived from helm's client-go require).
# Without `go`: prints how to get helm; exit 0, or 1 when CI=true.
# Env: WMAP_HELM_REBUILD=1 rebuilds even when the cached binary is fine.
set -euo pipefail

# Keep in sync with tests/deploy/helm.py (a test checks it).
HELM_VERSION=v3.22.0
HELM_MODULE=helm.sh/helm/v3

CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/helm-$HELM_VERSION"

log() { printf '[helm-bin] %s\n' "$*"; }

helm_ok() {  # helm_ok <binary> [<version>]: runnable helm (of that version)
    local bin=$1 want=${2:-} out
    [[ -x $bin ]] || return 1
    out=$("$bin" version --template '{{.Version}}' 2>/dev/null) || return 1
    [[ $out == v3.* ]] || return 1
    [[ -z $want || $out == "$want" ]]
}

# ---- 1. explicit binary -------------------------------------------------------------------------
if [[ -n ${WMAP_HELM:-} ]]; then
    if helm_ok "$WMAP_HELM"; then
        log "using WMAP_HELM=$WMAP_HELM ($("$WMAP_HELM" version --template '{{.Version}}')); nothing to build"
        exit 0
    fi
    log "WMAP_HELM=$WMAP_HELM is not a runnable helm v3; ignoring it"
fi

# ---- 2. cache hit ------------------------------------------------------------------------------
cache_hit() {
    [[ ${WMAP_HELM_REBUILD:-0} == 1 ]] && return 1
    if helm_ok "$CACHE_DIR/helm" "$HELM_VERSION"; then
        log "cache hit: $CACHE_DIR/helm ($HELM_VERSION)"
        return 0
    fi
    return 1
}
cache_hit && exit 0

# ---- no Go toolchain ---------------------------------------------------------------------------
if ! command -v go >/dev/null 2>&1; then
    cat <<MSG
[helm-bin] 'go' not found: cannot build helm $HELM_VERSION.
[helm-bin] Either install Go >= 1.26 (https://go.dev/dl/) and rerun 'bash tests/deploy/build-helm.sh',
[helm-bin] or point the tests at an existing helm v3: export WMAP_HELM=/path/to/helm
[helm-bin] The chart tests (tests/deploy) are skipped without it (they fail when CI=true).
MSG
    [[ ${CI:-} == true ]] && exit 1
    exit 0
fi

# ---- 3. build ----------------------------------------------------------------------------------
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.build.lock"
log "waiting for lock $CACHE_DIR/.build.lock"
flock 9
cache_hit && exit 0   # another run may have built while we waited
WMAP_HELM_REBUILD=0

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-buildvcs=false"
log "$(go version); GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE)"
START=$SECONDS

log "go mod download $HELM_MODULE@$HELM_VERSION"
gomod=$(go mod download -json "$HELM_MODULE@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
[[ -f $gomod ]] || { log "could not download $HELM_MODULE@$HELM_VERSION from the module proxy"; exit 1; }
if grep -q '^replace\|^[[:space:]]*replace[[:space:]]*(' "$gomod"; then
    log "  $gomod has replace directives: 'go install pkg@version' cannot build it; aborting"
    exit 1
fi
# helm's Makefile: Kubernetes major = client-go major + 1, minor = client-go minor
cg=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$gomod")
cg=${cg#v}
k8s_major=$(( ${cg%%.*} + 1 ))
k8s_minor=$(echo "$cg" | cut -d. -f2)
log "  client-go v$cg -> default Kubernetes version v$k8s_major.$k8s_minor for template/lint"

ldflags="-s -w -X $HELM_MODULE/internal/version.version=$HELM_VERSION"
ldflags+=" -X $HELM_MODULE/internal/version.gitTreeState=clean"
for pkg in pkg/lint/rules pkg/chartutil; do
    ldflags+=" -X $HELM_MODULE/$pkg.k8sVersionMajor=$k8s_major -X $HELM_MODULE/$pkg.k8sVersionMinor=$k8s_minor"
done

staging="$CACHE_DIR/staging"
rm -rf "$staging"; mkdir -p "$staging"
log "go install $HELM_MODULE/cmd/helm@$HELM_VERSION (cold: a few minutes on 2 cores)"
GOBIN="$staging" go install -trimpath -ldflags "$ldflags" "$HELM_MODULE/cmd/helm@$HELM_VERSION"
helm_ok "$staging/helm" "$HELM_VERSION" || {
    log "built binary reports '$("$staging/helm" version --template '{{.Version}}' 2>&1)', want $HELM_VERSION"
    exit 1
}
mv -f "$staging/helm" "$CACHE_DIR/helm"
rmdir "$staging" 2>/dev/null || true
log "-> $CACHE_DIR/helm ($("$CACHE_DIR/helm" version --short)); built in $((SECONDS - START)) s"
