"""A real etcd + kube-apiserver on 127.0.0.1 for the test suite (no controllers, no kubelet).

Usage::

    cp = ControlPlane(kube_apiserver_path, etcd_path)
    cp.start()
    with cp.client("alice") as c:
        assert c.get("/api/v1/pods").status_code == 403
    cp.stop()

Users: ``admin`` (client cert, system:masters), ``alice`` (client cert, group team-a),
``bob`` (bearer token, group team-b), ``admin-token`` (bearer token, system:masters).
"""

from __future__ import annotations

import atexit
import base64
import json
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from . import crds as crdlib
from .kubeconfig import write_kubeconfig
from .pki import make_pki
from .procs import ControlPlaneError, PortInUse, check_alive, free_ports, rss_bytes, spawn, tail
from .procs import terminate

__all__ = ["ControlPlane", "ControlPlaneError"]

CERT_USERS: dict[str, tuple[str, ...]] = {"admin": ("system:masters",), "alice": ("team-a",)}
TOKEN_USERS: dict[str, tuple[str, ...]] = {"bob": ("team-b",), "admin-token": ("system:masters",)}
_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class ControlPlane:
    """etcd + kube-apiserver processes, their PKI, kubeconfigs and REST helpers.

    Attributes (valid after ``start()``): ``server`` (``https://127.0.0.1:<port>``),
    ``ca_file``, ``admin_kubeconfig``, ``alice_kubeconfig``, ``bob_kubeconfig`` (Paths),
    ``kubeconfigs`` (user -> Path), ``tokens`` (user -> bearer token), ``tmpdir``,
    ``etcd_log``, ``apiserver_log``, ``etcd_url``, ``timings`` (step -> seconds),
    ``installed_crds`` (CRD name -> "own" | "shared").
    Errors: ``ControlPlaneError`` when a process dies or is not ready in time.
    """

    def __init__(self, kube_apiserver: Path, etcd: Path, *, tmp_parent: Path | None = None,
                 prefix: str = "wmap-cp-", ready_timeout: float = 120.0) -> None:
        self.kube_apiserver_bin = Path(kube_apiserver)
        self.etcd_bin = Path(etcd)
        self.tmpdir = Path(tempfile.mkdtemp(prefix=prefix, dir=tmp_parent))
        self.ready_timeout = ready_timeout
        self.etcd_log = self.tmpdir / "etcd.log"
        self.apiserver_log = self.tmpdir / "kube-apiserver.log"
        pki_dir = self.tmpdir / "pki"
        self.pki = make_pki(pki_dir, CERT_USERS)
        self.ca_file = self.pki.ca.cert
        self.tokens = {u: secrets.token_urlsafe(24) for u in TOKEN_USERS}
        self.token_file = pki_dir / "tokens.csv"
        self.token_file.write_text("".join(
            f'{self.tokens[u]},{u},uid-{u},"{",".join(g)}"\n' for u, g in TOKEN_USERS.items()))
        self.token_file.chmod(0o600)
        self.port = self.etcd_port = self.etcd_peer_port = 0
        self.server = self.etcd_url = ""
        self.kubeconfigs: dict[str, Path] = {}
        self.timings: dict[str, float] = {}
        self.installed_crds: dict[str, str] = {}
        self._etcd: subprocess.Popen | None = None
        self._apiserver: subprocess.Popen | None = None
        atexit.register(self._atexit)

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start etcd and kube-apiserver on free ports, wait ready, write kubeconfigs.

        Retries up to 5 times on "address already in use". Raises ``ControlPlaneError``.
        """
        t0 = time.monotonic()
        for attempt in range(5):
            self.etcd_port, self.etcd_peer_port = free_ports(2)
            self.etcd_url = f"http://127.0.0.1:{self.etcd_port}"
            try:
                self._start_etcd()
                break
            except PortInUse:
                if attempt == 4:
                    raise
        for attempt in range(5):
            (self.port,) = free_ports(1)
            self.server = f"https://127.0.0.1:{self.port}"
            try:
                self._start_apiserver()
                break
            except PortInUse:
                if attempt == 4:
                    raise
        self._write_kubeconfigs()
        self.timings["start"] = time.monotonic() - t0

    def stop(self, *, keep_dir: bool = False) -> None:
        """Stop kube-apiserver then etcd (SIGTERM, 10 s, SIGKILL) and remove ``tmpdir``.

        If either process had died on its own, the tails of both logs are printed first.
        """
        died = [p for p in (self._apiserver, self._etcd) if p is not None and p.poll() is not None]
        if died:
            print(self.log_tails())
        self.stop_apiserver()
        terminate(self._etcd)
        self._etcd = None
        if not keep_dir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (etcd and all data stay)."""
        terminate(self._apiserver)
        self._apiserver = None

    def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same port against the same etcd; wait ready.

        Retries for a few seconds if the port is still held. Raises ``ControlPlaneError``.
        """
        if self._apiserver is not None and self._apiserver.poll() is None:
            return
        for attempt in range(10):
            try:
                self._start_apiserver()
                return
            except PortInUse:
                if attempt == 9:
                    raise
                time.sleep(0.5)

    def restart_apiserver(self) -> None:
        """``stop_apiserver()`` then ``start_apiserver()``; records ``timings['restart']``."""
        t0 = time.monotonic()
        self.stop_apiserver()
        self.start_apiserver()
        self.timings["restart"] = time.monotonic() - t0

    def _atexit(self) -> None:
        terminate(self._apiserver, grace=3)
        terminate(self._etcd, grace=3)

    # ---- processes --------------------------------------------------------------------------
    def _start_etcd(self) -> None:
        data = self.tmpdir / "etcd-data"
        shutil.rmtree(data, ignore_errors=True)
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        argv = [
            str(self.etcd_bin), "--name=t", f"--data-dir={data}",
            f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=t={peer}", "--unsafe-no-fsync=true",
            "--max-request-bytes=10485760", "--log-level=warn",
        ]
        self._etcd = spawn(argv, self.etcd_log, self.tmpdir)
        deadline = time.monotonic() + 15
        with httpx.Client(trust_env=False, timeout=2) as c:
            while True:
                check_alive(self._etcd, "etcd", self.etcd_log)
                try:
                    if c.get(f"{self.etcd_url}/health").json().get("health") == "true":
                        return
                except (httpx.HTTPError, ValueError):
                    pass
                if time.monotonic() > deadline:
                    terminate(self._etcd)
                    raise ControlPlaneError(f"etcd not healthy in 15 s:\n{tail(self.etcd_log)}")
                time.sleep(0.1)

    def _apiserver_argv(self) -> list[str]:
        p = self.pki
        return [
            str(self.kube_apiserver_bin),
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--tls-cert-file={p.serving.cert}", f"--tls-private-key-file={p.serving.key}",
            f"--client-ca-file={p.ca.cert}",
            f"--token-auth-file={self.token_file}",
            f"--service-account-issuer=https://127.0.0.1:{self.port}",
            f"--service-account-key-file={p.sa_public}",
            f"--service-account-signing-key-file={p.sa_private}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
            "--v=1",
        ]

    def _start_apiserver(self) -> None:
        t0 = time.monotonic()
        self._apiserver = spawn(self._apiserver_argv(), self.apiserver_log, self.tmpdir)
        deadline = t0 + self.ready_timeout
        with self.client() as c:
            for path in ("/readyz", "/api/v1/namespaces/default"):
                while True:
                    check_alive(self._apiserver, "kube-apiserver", self.apiserver_log)
                    try:
                        if c.get(path, timeout=5).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        terminate(self._apiserver)
                        raise ControlPlaneError(
                            f"kube-apiserver: {path} not 200 within {self.ready_timeout} s\n"
                            + self.log_tails())
                    time.sleep(0.2)
        self.timings["apiserver_ready"] = time.monotonic() - t0

    def log_tails(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the etcd and kube-apiserver logs, labelled."""
        return (f"--- {self.etcd_log} ---\n{tail(self.etcd_log, lines)}\n"
                f"--- {self.apiserver_log} ---\n{tail(self.apiserver_log, lines)}")

    def pids(self) -> dict[str, int | None]:
        """Process ids: ``{"kube-apiserver": pid, "etcd": pid}`` (None if not running)."""
        return {"kube-apiserver": self._apiserver.pid if self._apiserver else None,
                "etcd": self._etcd.pid if self._etcd else None}

    def rss(self) -> dict[str, int | None]:
        """Current RSS in bytes: ``{"kube-apiserver": n, "etcd": n}`` (None if not running)."""
        return {"kube-apiserver": rss_bytes(self._apiserver), "etcd": rss_bytes(self._etcd)}

    # ---- clients and kubeconfigs ------------------------------------------------------------
    def ssl_context(self, user: str = "admin") -> ssl.SSLContext:
        """TLS context trusting the test CA; with ``user``'s client cert for cert users."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        if user in self.pki.clients:
            pair = self.pki.clients[user]
            ctx.load_cert_chain(str(pair.cert), str(pair.key))
        return ctx

    def _client_kwargs(self, user: str) -> dict:
        if user not in self.pki.clients and user not in self.tokens:
            raise KeyError(f"unknown user {user!r}; known: {sorted([*self.pki.clients, *self.tokens])}")
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user in self.tokens else {}
        return {"base_url": self.server, "verify": self.ssl_context(user), "headers": headers,
                "timeout": 30.0, "trust_env": False}

    def client(self, user: str = "admin") -> httpx.Client:
        """A new ``httpx.Client`` for ``user`` (admin, alice, bob, admin-token); close it.

        ``base_url`` is ``server``; auth by client cert or bearer token. Raises ``KeyError``
        for an unknown user.
        """
        return httpx.Client(**self._client_kwargs(user))

    def async_client(self, user: str = "admin") -> httpx.AsyncClient:
        """Same as ``client()`` but an ``httpx.AsyncClient``."""
        return httpx.AsyncClient(**self._client_kwargs(user))

    def _write_kubeconfigs(self) -> None:
        for user in ("admin", "alice", "bob"):
            cred = ({"token": self.tokens[user]} if user in self.tokens
                    else {"cert": self.pki.clients[user].cert, "key": self.pki.clients[user].key})
            path = self.tmpdir / f"kubeconfig-{user}.yaml"
            write_kubeconfig(path, self.server, self.ca_file, user, **cred)
            self.kubeconfigs[user] = path
        self.admin_kubeconfig = self.kubeconfigs["admin"]
        self.alice_kubeconfig = self.kubeconfigs["alice"]
        self.bob_kubeconfig = self.kubeconfigs["bob"]

    # ---- etcd -------------------------------------------------------------------------------
    def compact_etcd(self, *, restart_apiserver: bool = True) -> int:
        """Compact etcd at its current revision; return that revision.

        Afterwards every resourceVersion older than the returned revision is gone from etcd.
        The revision is also recorded in ``compact_rev_key`` (as kube-apiserver's own
        compactor does). kube-apiserver's watch cache still answers watches and exact-RV lists
        at old versions from memory, so by default the apiserver is restarted: then a watch
        from an old resourceVersion, a list with ``resourceVersionMatch=Exact`` (or ``limit``
        + old RV) and an old ``continue`` token all get 410 Gone. With
        ``restart_apiserver=False`` only requests that reach etcd see 410 (the cache drops its
        snapshots within about 16 s). Raises ``ControlPlaneError`` on an etcd error.
        """
        def b64(s: str) -> str:
            return base64.b64encode(s.encode()).decode()

        with httpx.Client(base_url=self.etcd_url, trust_env=False, timeout=30) as c:
            def post(path: str, body: dict) -> dict:
                r = c.post(path, json=body)
                if r.status_code != 200:
                    raise ControlPlaneError(f"etcd {path}: {r.status_code} {r.text}")
                return r.json()

            # a write first, so that even an idle cluster has a newer revision than any object
            rev = int(post("/v3/kv/put", {"key": b64("/wmap-test/compaction-marker"),
                                          "value": b64(str(time.time()))})["header"]["revision"])
            post("/v3/kv/compaction", {"revision": str(rev), "physical": True})
            post("/v3/kv/put", {"key": b64("compact_rev_key"), "value": b64(str(rev))})
            resp = post("/v3/kv/range", {"key": b64("compact_rev_key")})
            if int(resp["header"]["revision"]) <= rev:
                raise ControlPlaneError(f"etcd revision did not advance past {rev}: {resp}")
        if restart_apiserver and self._apiserver is not None:
            self.restart_apiserver()
        return rev

    # ---- CRDs -------------------------------------------------------------------------------
    def create_crd(self, manifest: dict, timeout: float = 120.0) -> dict:
        """Create one CRD (plain POST, compact JSON, never apply); wait Established + discovery.

        Returns the created CRD as the server stored it. Raises ``ControlPlaneError`` on a
        non-201 answer (e.g. 409 if it exists) or if it is not served within ``timeout`` s.
        """
        return self.create_crds([manifest], timeout=timeout)[0]

    def create_crds(self, manifests: list[dict], timeout: float = 300.0, source: str = "test") -> list[dict]:
        """Create several CRDs first, then wait for all (faster than one by one).

        Same contract as ``create_crd``; returns the created objects in input order.
        """
        created = []
        with self.client() as c:
            for m in manifests:
                body = json.dumps(m, separators=(",", ":")).encode()
                r = c.post(_CRD_PATH, content=body, headers={"Content-Type": "application/json"},
                           timeout=120)
                if r.status_code != 201:
                    raise ControlPlaneError(
                        f"create CRD {m['metadata']['name']}: HTTP {r.status_code} {r.text[:2000]}")
                created.append(r.json())
            deadline = time.monotonic() + timeout
            for obj in created:
                self._wait_crd(c, obj, deadline)
                self.installed_crds[obj["metadata"]["name"]] = source
        return created

    def _wait_crd(self, c: httpx.Client, crd: dict, deadline: float) -> None:
        name, spec = crd["metadata"]["name"], crd["spec"]
        plural = spec["names"]["plural"]
        served = [v["name"] for v in spec["versions"] if v.get("served")]
        while True:
            r = c.get(f"{_CRD_PATH}/{name}")
            status = (r.json().get("status") or {}) if r.status_code == 200 else {}
            conds = {x["type"]: x["status"] for x in status.get("conditions") or []}
            if conds.get("Established") == "True" and all(
                    self._discovered(c, spec["group"], v, plural) for v in served):
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"CRD {name} not Established/discoverable: {conds}")
            time.sleep(0.1)

    @staticmethod
    def _discovered(c: httpx.Client, group: str, version: str, plural: str) -> bool:
        r = c.get(f"/apis/{group}/{version}")
        return r.status_code == 200 and any(
            res.get("name") == plural for res in r.json().get("resources", []))

    def install_shared_crds(self, directory: Path | None = None) -> list[str]:
        """Create the operators' CRDs from the shared folder (see ``crds.shared_crds``).

        Skips names already installed. Returns the created CRD names ([] if no folder).
        """
        t0 = time.monotonic()
        todo = [m for m in crdlib.shared_crds(directory)
                if m["metadata"]["name"] not in self.installed_crds]
        self.create_crds(todo, source="shared")
        self.timings["crds_shared"] = time.monotonic() - t0
        return [m["metadata"]["name"] for m in todo]

    def install_own_crds(self) -> list[str]:
        """Create the project's minimal CRDs whose names are not installed yet (e.g. by
        ``install_shared_crds``). Returns the created CRD names."""
        t0 = time.monotonic()
        todo = [m for m in crdlib.own_crds() if m["metadata"]["name"] not in self.installed_crds]
        self.create_crds(todo, source="own")
        self.timings["crds_own"] = time.monotonic() - t0
        return [m["metadata"]["name"] for m in todo]
