"""A tiny HTTP(S) API server on 127.0.0.1 (aiohttp.web) for transport and client tests."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed serving cert for 127.0.0.1 (cert path, key path); it is its own CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-apiserver")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class FakeHttpServer:
    """Routes GET paths to handlers; records requests. Use as ``async with``."""

    def __init__(self, routes: dict[str, Handler], *, tls: tuple[Path, Path] | None = None) -> None:
        self.routes = routes
        self.requests: list[web.Request] = []
        self.tls = tls
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request)
        handler = self.routes.get(request.path)
        if handler is None:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound",
                                      "message": f"{request.path} not found"}, status=404)
        return await handler(request)

    async def __aenter__(self) -> FakeHttpServer:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        context = None
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*self.tls)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"{'https' if context else 'http'}://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
