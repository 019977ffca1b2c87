#!/usr/bin/env bash
# A local stand-in for the Dockerfile's base (python:3.11.15-slim-bookworm) for machines
# that cannot reach a container registry: a Debian bookworm minbase root filesystem made by
# mmdebstrap from Debian's packages, with this machine's CPython 3.11 copied to /usr/local
# (the official image's layout: /usr/local/bin/python3 and python, /usr/local/lib/python3.11,
# libpython in /usr/local/lib, PATH and LANG as there) and this machine's CA bundle (pip and
# Python's ssl are pointed at it, as pip is here). Not the published image: the test
# build it serves (tests/deploy/test_image_build.py, make release-check) checks the Dockerfile's
# steps, not the base's bytes.
#
# Prints the image name. Idempotent: an existing image is reused; the root filesystem
# (a directory) is cached in ${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/standin-base/.
# Needs root (or a rootless buildah set-up), buildah and mmdebstrap (Debian packages).
set -euo pipefail

NAME="${WMAP_STANDIN_IMAGE:-localhost/wmap-standin-python:3.11-slim-bookworm}"
PYTHON="${PYTHON:-python3}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/standin-base"

if buildah inspect --type image "$NAME" >/dev/null 2>&1; then
  echo "$NAME"
  exit 0
fi
for tool in buildah mmdebstrap tar; do
  command -v "$tool" >/dev/null || { echo "standin-base.sh: $tool is not installed" >&2; exit 3; }
done
prefix="$("$PYTHON" -c 'import sys; print(sys.base_prefix)')"
version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$version" = "3.11" ] || { echo "standin-base.sh: $PYTHON is $version, the image runs 3.11" >&2; exit 3; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
rootfs="$CACHE/bookworm-minbase"
if [ ! -d "$rootfs" ]; then
  rm -rf "$rootfs.part"
  # the shared libraries a CPython build links against, and what the official slim image adds
  mmdebstrap --quiet --variant=minbase \
    --include=ca-certificates,netbase,tzdata,libssl3,libffi8,libsqlite3-0,libbz2-1.0,liblzma5,zlib1g,libncursesw6,libreadline8,libuuid1,libgdbm6,libexpat1,libdb5.3 \
    bookworm "$rootfs.part"
  mv "$rootfs.part" "$rootfs"
fi

ctr="$(buildah from scratch)"
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt="$(buildah mount "$ctr")"
tar -C "$rootfs" -cf - . | tar -C "$mnt" -xf -
# the interpreter and its standard library; not its site-packages, tests or build config
tar -C "$prefix" --exclude='lib/python3.11/site-packages/*' --exclude='lib/python3.11/test' \
  --exclude='lib/python3.11/config-3.11-*' --exclude='__pycache__' -cf - bin lib include \
  | tar -C "$mnt/usr/local" -xf -
for src in pip3 pydoc3 python3 python3-config; do
  [ -e "$mnt/usr/local/bin/$src" ] && [ ! -e "$mnt/usr/local/bin/${src%3}" ] && ln -s "$src" "$mnt/usr/local/bin/${src%3}"
done
# this machine's trust store, so that pip in the build reaches the package index the way it
# does here (a machine behind a TLS-inspecting proxy trusts its CA in this bundle)
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/ca-certificates.crt"
fi
echo /usr/local/lib > "$mnt/etc/ld.so.conf.d/usr-local.conf"
chroot "$mnt" /sbin/ldconfig
chroot "$mnt" /usr/local/bin/python3 -c 'import ssl, sqlite3, ctypes, venv, ensurepip' >&2
buildah umount "$ctr" >/dev/null
buildah config --env PATH=/usr/local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env LANG=C.UTF-8 --env PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --cmd python3 "$ctr"
buildah commit --quiet "$ctr" "$NAME" >/dev/null
echo "$NAME"
