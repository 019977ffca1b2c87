"""Test PKI for the real control plane: one CA, a serving cert, client certs, SA keys.

Everything is ECDSA P-256, written as PEM files into a directory; nothing here is secret
beyond the lifetime of one test run.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = _dt.timedelta(days=2)


@dataclass(frozen=True)
class CertPair:
    """Paths of a PEM certificate and its PEM (PKCS8, unencrypted) private key."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """All files of the test PKI.

    ``ca``: CA cert + key (signs everything, is also the client CA);
    ``serving``: kube-apiserver serving cert (SAN IP 127.0.0.1, DNS localhost);
    ``clients``: user name -> client cert pair (e.g. "admin", "alice");
    ``sa_private`` / ``sa_public``: service-account signing key pair (PEM).
    """

    ca: CertPair
    serving: CertPair
    clients: dict[str, CertPair]
    sa_private: Path
    sa_public: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, pub) -> x509.CertificateBuilder:
    now = _dt.datetime.now(_dt.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(pub)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )


def _leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName] | None,
    out: Path,
    stem: str,
) -> CertPair:
    key = _key()
    b = (
        _builder(subject, ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=True,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = b.sign(ca_key, hashes.SHA256())
    pair = CertPair(out / f"{stem}.crt", out / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key)
    return pair


def make_pki(out: Path, users: dict[str, tuple[str, ...]]) -> Pki:
    """Create the CA, serving cert, one client cert per user, and the SA key pair in ``out``.

    ``users`` maps a user name (the cert CN) to its groups (the cert O values), e.g.
    ``{"admin": ("system:masters",), "alice": ("team-a",)}``. Returns the file paths.
    Raises ``OSError`` if ``out`` is not writable.
    """
    out.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("wmap-test-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca = CertPair(out / "ca.crt", out / "ca.key")
    ca.cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(ca_key, ca.key)

    serving = _leaf(
        ca_key, ca_cert, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")],
        out, "apiserver",
    )
    clients = {
        user: _leaf(ca_key, ca_cert, _name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH,
                    None, out, f"user-{user}")
        for user, groups in users.items()
    }

    sa_key = _key()
    sa_private, sa_public = out / "sa.key", out / "sa.pub"
    _write_key(sa_key, sa_private)
    sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(ca=ca, serving=serving, clients=clients, sa_private=sa_private, sa_public=sa_public)
