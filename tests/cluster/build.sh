#!/usr/bin/env bash
# Provide kube-apiserver and etcd for the real-cluster test tier (tests/cluster).
#
# Order:
#   1. TEST_ASSET_KUBE_APISERVER + TEST_ASSET_ETCD (or a KUBEBUILDER_ASSETS directory) set and
#      runnable -> nothing to do.
#   2. Cache hit: ${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/kube-test-bin/<pair>/
#      holds kube-apiserver and etcd whose --version match the pair -> nothing to do.
#   3. Build from the Go module proxy (GOTOOLCHAIN=local, CGO_ENABLED=0, -trimpath -pgo=off),
#      one wrapper module per binary, work dirs under the cache dir, serialized with flock.
#      Pinned pair first; if that build fails, the fallback pair.
# Without `go`: prints how to get the binaries; exit 0, or 1 when CI=true.
# Env: WMAP_KUBE_BIN_REBUILD=1 ignores existing cached binaries (rebuilds the pinned pair).
set -euo pipefail

# Keep in sync with tests/cluster/binaries.py (a test checks it).
PINNED_KUBE=v1.37.2
PINNED_ETCD=v3.7.3
FALLBACK_KUBE=v1.36.3
FALLBACK_ETCD=v3.6.16

CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/kube-test-bin"

log() { printf '[cluster-bin] %s\n' "$*"; }

# ---- version checks ---------------------------------------------------------------------------
kube_ok() {  # kube_ok <binary> [<version>]: runnable kube-apiserver (of that version)
    local bin=$1 want=${2:-} out
    [[ -x $bin ]] || return 1
    out=$("$bin" --version 2>/dev/null) || return 1
    [[ $out == "Kubernetes v"* ]] || return 1
    [[ -z $want || $out == "Kubernetes $want" ]]
}
etcd_ok() {  # etcd_ok <binary> [<version>]: runnable etcd (of that version, without the v)
    local bin=$1 want=${2:-} out
    [[ -x $bin ]] || return 1
    out=$("$bin" --version 2>/dev/null) || return 1
    [[ $out == *"etcd Version: "* ]] || return 1
    [[ -z $want || $out == *"etcd Version: ${want#v}"* ]]
}
pair_dir() { echo "$CACHE_ROOT/$1-etcd-$2"; }
pair_cached() {  # pair_cached <kube> <etcd>
    local d; d=$(pair_dir "$1" "$2")
    kube_ok "$d/kube-apiserver" "$1" && etcd_ok "$d/etcd" "$2"
}

# ---- 1. explicit assets -----------------------------------------------------------------------
if [[ -n ${TEST_ASSET_KUBE_APISERVER:-} || -n ${TEST_ASSET_ETCD:-} ]]; then
    if kube_ok "${TEST_ASSET_KUBE_APISERVER:-}" && etcd_ok "${TEST_ASSET_ETCD:-}"; then
        log "using TEST_ASSET_KUBE_APISERVER=$TEST_ASSET_KUBE_APISERVER TEST_ASSET_ETCD=$TEST_ASSET_ETCD; nothing to build"
        exit 0
    fi
    log "TEST_ASSET_KUBE_APISERVER / TEST_ASSET_ETCD set but not both runnable; ignoring them"
fi
if [[ -n ${KUBEBUILDER_ASSETS:-} ]]; then
    if kube_ok "$KUBEBUILDER_ASSETS/kube-apiserver" && etcd_ok "$KUBEBUILDER_ASSETS/etcd"; then
        log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS; nothing to build"
        exit 0
    fi
    log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks a runnable kube-apiserver + etcd; ignoring it"
fi

# ---- 2. cache hit ------------------------------------------------------------------------------
cache_hit() {
    [[ ${WMAP_KUBE_BIN_REBUILD:-0} == 1 ]] && return 1
    if pair_cached "$PINNED_KUBE" "$PINNED_ETCD"; then
        log "cache hit: $(pair_dir "$PINNED_KUBE" "$PINNED_ETCD")"
        return 0
    fi
    if pair_cached "$FALLBACK_KUBE" "$FALLBACK_ETCD"; then
        log "cache hit (fallback pair): $(pair_dir "$FALLBACK_KUBE" "$FALLBACK_ETCD")"
        log "  (the pinned build failed earlier; WMAP_KUBE_BIN_REBUILD=1 retries it)"
        return 0
    fi
    return 1
}
cache_hit && exit 0

# ---- no Go toolchain ---------------------------------------------------------------------------
if ! command -v go >/dev/null 2>&1; then
    cat <<MSG
[cluster-bin] 'go' not found: cannot build kube-apiserver $PINNED_KUBE and etcd $PINNED_ETCD.
[cluster-bin] Either install Go >= 1.26 (https://go.dev/dl/) and rerun 'make cluster-bin',
[cluster-bin] or point the tests at existing binaries:
[cluster-bin]   export TEST_ASSET_KUBE_APISERVER=/path/to/kube-apiserver TEST_ASSET_ETCD=/path/to/etcd
[cluster-bin]   or export KUBEBUILDER_ASSETS=/dir/with/both (e.g. an envtest archive from
[cluster-bin]   https://github.com/kubernetes-sigs/controller-tools/releases, envtest-v1.37.*)
[cluster-bin] Tests marked 'cluster' are skipped without them (they fail when CI=true).
MSG
    [[ ${CI:-} == true ]] && exit 1
    exit 0
fi

# ---- 3. build ----------------------------------------------------------------------------------
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.build.lock"
log "waiting for lock $CACHE_ROOT/.build.lock"
flock 9
cache_hit && exit 0   # another run may have built while we waited

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-buildvcs=false"
log "$(go version); GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE)"

build_kube() {  # build_kube <version> <out-dir>
    local ver=$1 out=$2 work="$CACHE_ROOT/build/kube-$1" staging_ver gomod name n=0
    staging_ver="v0.${ver#v1.}"
    log "kube-apiserver $ver: wrapper module in $work (staging modules at $staging_ver)"
    rm -rf "$work"; mkdir -p "$work"; cd "$work"
    go mod init kubebuild.invalid >/dev/null 2>&1
    go mod edit -go=1.26.0 -godebug=default=go1.26
    gomod=$(go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$ver")
    log "  k8s.io/kubernetes go.mod: $gomod"
    # every 'k8s.io/NAME => ./staging/src/k8s.io/NAME' line, read from Kubernetes' own go.mod
    for name in $(awk '{ for (i = 1; i < NF; i++) if ($(i+1) == "=>" && $(i+2) ~ /^\.\/staging\/src\// && $i ~ /^k8s\.io\//) print $i }' "$gomod" | sort -u); do
        go mod edit "-replace=$name=$name@$staging_ver"
        n=$((n + 1))
    done
    log "  $n staging replaces"
    [[ $n -gt 0 ]] || { log "  no staging replaces found in $gomod"; return 1; }
    log "  go get -tool k8s.io/kubernetes/cmd/kube-apiserver@$ver"
    go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$ver"
    local minor=${ver#v1.} ldx="" pkg
    minor=${minor%%.*}
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldx+=" -X $pkg.gitVersion=$ver -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ldx+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    done
    log "  go build kube-apiserver (cold: about 5 min measured on 2 cores, more on slow disks/networks)"
    local t0=$SECONDS
    go build -trimpath -pgo=off -ldflags "-s -w$ldx" -o "$work/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
    log "  built in $((SECONDS - t0)) s"
    kube_ok "$work/kube-apiserver" "$ver" || { log "  --version mismatch: $("$work/kube-apiserver" --version 2>&1)"; return 1; }
    mkdir -p "$out"; mv -f "$work/kube-apiserver" "$out/kube-apiserver"
    log "  -> $out/kube-apiserver ($("$out/kube-apiserver" --version))"
}

build_etcd() {  # build_etcd <version> <out-dir>
    local ver=$1 out=$2 work="$CACHE_ROOT/build/etcd-$1"
    log "etcd $ver: wrapper module in $work"
    rm -rf "$work"; mkdir -p "$work"; cd "$work"
    go mod init etcdbuild.invalid >/dev/null 2>&1
    log "  go get -tool go.etcd.io/etcd/server/v3@$ver"
    go get -tool "go.etcd.io/etcd/server/v3@$ver"
    log "  go build etcd"
    local t0=$SECONDS
    go build -trimpath -pgo=off -ldflags "-s -w" -o "$work/etcd" go.etcd.io/etcd/server/v3
    log "  built in $((SECONDS - t0)) s"
    etcd_ok "$work/etcd" "$ver" || { log "  --version mismatch: $("$work/etcd" --version 2>&1)"; return 1; }
    mkdir -p "$out"; mv -f "$work/etcd" "$out/etcd"
    log "  -> $out/etcd ($("$out/etcd" --version | head -1))"
}

build_pair() {  # build_pair <kube> <etcd>
    local out; out=$(pair_dir "$1" "$2")
    if etcd_ok "$out/etcd" "$2" && [[ ${WMAP_KUBE_BIN_REBUILD:-0} != 1 ]]; then
        log "etcd $2 already in $out"
    else
        build_etcd "$2" "$out"
    fi
    if kube_ok "$out/kube-apiserver" "$1" && [[ ${WMAP_KUBE_BIN_REBUILD:-0} != 1 ]]; then
        log "kube-apiserver $1 already in $out"
    else
        build_kube "$1" "$out"
    fi
    log "done: $out"
}

# build_pair runs in a subshell that is NOT in an if/||/&& context, so `set -e` is honoured inside
# it (bash ignores errexit in functions called from a condition).
START=$SECONDS
set +e
( set -e; build_pair "$PINNED_KUBE" "$PINNED_ETCD" )
rc=$?
set -e
if [[ $rc -eq 0 ]]; then
    log "total build time $((SECONDS - START)) s"
    exit 0
fi
log "pinned build ($PINNED_KUBE + etcd $PINNED_ETCD) FAILED (exit $rc); trying fallback $FALLBACK_KUBE + etcd $FALLBACK_ETCD"
set +e
( set -e; build_pair "$FALLBACK_KUBE" "$FALLBACK_ETCD" )
rc=$?
set -e
if [[ $rc -eq 0 ]]; then
    log "total build time $((SECONDS - START)) s (fallback pair)"
    exit 0
fi
log "fallback build FAILED too (exit $rc); see the messages above"
exit 1
