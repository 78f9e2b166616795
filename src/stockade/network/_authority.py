"""The per-harness certificate authority (issue 41): made in memory for a fixed set of
hosts, minting a cached leaf per host on demand, and the bundle a command trusts it by.

Pure (no event loop); it touches files only when asked to write the key or the bundle.
The CA is name-constrained to its hosts, so even its key could sign for no other host
that a client checking constraints (OpenSSL, Go, NSS) would accept.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..errors import ConfigError, brief
from ..reprs import fields_repr
from ._ruled import ruled_host
from .rules import parse_address

AUTHORITY_VALIDITY = timedelta(days=30)
LEAF_VALIDITY = timedelta(days=1)
# A cached leaf this close to its end is minted again.
LEAF_RENEWAL = timedelta(hours=1)
# Certificates begin a little in the past: a client's clock may be behind the harness's.
CLOCK_SKEW = timedelta(minutes=5)

# Where the system's trust store is, after what `ssl` says (Debian, Fedora, openSUSE,
# Alpine, macOS with Homebrew's OpenSSL).
SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/usr/local/etc/openssl/cert.pem",
    "/opt/homebrew/etc/openssl@3/cert.pem",
)

# The variables through which the usual clients take a CA bundle.
TRUST_VARIABLES = (
    "SSL_CERT_FILE",  # OpenSSL (curl with OpenSSL, Python's ssl, Ruby, wget, Go)
    "REQUESTS_CA_BUNDLE",  # Python requests
    "CURL_CA_BUNDLE",  # curl
    "NODE_EXTRA_CA_CERTS",  # Node, added to its built-in roots
    "GIT_SSL_CAINFO",  # git over HTTPS
    "PIP_CERT",  # pip
)


class CertificateRefused(ValueError):
    """A leaf was asked for a host the authority was not made for (or not a host)."""


def _hosts(hosts: Iterable[str]) -> frozenset[str]:
    made = frozenset(ruled_host(host, "certificate authority") for host in hosts)
    if not made:
        raise ConfigError("certificate authority: no host to mint certificates for")
    return made


def _general_name(host: str) -> x509.GeneralName:
    address = parse_address(host)
    if address is not None:
        return x509.IPAddress(address)
    return x509.DNSName(host)


def _constraints(hosts: frozenset[str]) -> x509.NameConstraints:
    """Only `hosts` (a DNS name constraint also covers its subdomains): IP addresses not
    named are excluded, and with no DNS name the reserved `invalid` is the only one."""
    names: list[x509.GeneralName] = []
    addresses: list[x509.GeneralName] = []
    for host in sorted(hosts):
        address = parse_address(host)
        if address is None:
            names.append(x509.DNSName(host))
        else:
            addresses.append(x509.IPAddress(ipaddress.ip_network(address)))
    excluded: list[x509.GeneralName] | None = None
    if not addresses:
        excluded = [
            x509.IPAddress(ipaddress.ip_network("0.0.0.0/0")),
            x509.IPAddress(ipaddress.ip_network("::/0")),
        ]
    return x509.NameConstraints(
        permitted_subtrees=(names or [x509.DNSName("invalid")]) + addresses,
        excluded_subtrees=excluded,
    )


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(UTC)


@attrs.frozen
class Leaf:
    """A leaf certificate for one host, with its key (never in repr)."""

    __repr__ = fields_repr

    host: str
    certificate_pem: bytes
    key_pem: bytes = attrs.field(repr=False)
    not_after: datetime

    def server_context(self) -> ssl.SSLContext:
        """A TLS server context presenting this leaf (TLS 1.2 and up, HTTP/1.1)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # A TLS 1.2 client asking to renegotiate is refused (its new handshake could
        # change what the connection is while the proxy judges it).
        context.options |= getattr(ssl, "OP_NO_RENEGOTIATION", 0)
        context.set_alpn_protocols(["http/1.1"])
        _load_chain(context, self.certificate_pem + self.key_pem)
        return context


def _load_chain(context: ssl.SSLContext, pem: bytes) -> None:
    """`ssl` loads a key from a path only: an anonymous memory file where there is one
    (the key never has a name), else a 0600 file in a fresh 0700 directory, removed at
    once."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        descriptor: int = memfd_create("stockade-leaf", os.MFD_CLOEXEC)
        try:
            os.write(descriptor, pem)
            context.load_cert_chain(f"/proc/self/fd/{descriptor}")
        finally:
            os.close(descriptor)
        return
    with tempfile.TemporaryDirectory(prefix="stockade-leaf-") as directory:
        path = os.path.join(directory, "leaf.pem")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(descriptor, pem)
        finally:
            os.close(descriptor)
        try:
            context.load_cert_chain(path)
        finally:
            os.unlink(path)


def _inside(path: Path, roots: Iterable[str | os.PathLike[str]]) -> str | None:
    where = Path(os.path.realpath(path.parent)) / path.name
    for root in roots:
        real = Path(os.path.realpath(root))
        if where == real or where.is_relative_to(real):
            return str(root)
    return None


def _write_new(
    path: str | os.PathLike[str], data: bytes, mode: int, outside: Iterable[str | os.PathLike[str]]
) -> Path:
    """Write `data` to a file that must not exist yet and must not be a symlink, with
    `mode` exactly, refusing a path inside any of `outside`."""
    target = Path(path)
    root = _inside(target, outside)
    if root is not None:
        raise ConfigError(f"{brief(str(target))} lies inside {brief(root)}, where it may not go")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(target, flags, mode)
    try:
        os.fchmod(descriptor, mode)  # the umask may have narrowed it; never widened
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)
    return target


class CertificateAuthority:
    """A CA made in memory for `hosts` (normalised as rules are; IP addresses too),
    which mints a leaf for one of them on demand (`leaf_for`), cached until near its
    end, and refuses any other host. The key stays in memory unless `write_key` is
    asked to put it in a new 0600 file."""

    __slots__ = ("_key", "_leaves", "certificate", "hosts", "leaf_validity")

    def __init__(
        self,
        hosts: Iterable[str],
        *,
        now: datetime | None = None,
        validity: timedelta = AUTHORITY_VALIDITY,
        leaf_validity: timedelta = LEAF_VALIDITY,
    ) -> None:
        self.hosts = _hosts(hosts)
        self.leaf_validity = leaf_validity
        self._leaves: dict[str, Leaf] = {}
        self._key = ec.generate_private_key(ec.SECP256R1())
        public = self._key.public_key()
        start = _now(now) - CLOCK_SKEW
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "stockade"),
                x509.NameAttribute(NameOID.COMMON_NAME, "stockade harness CA"),
            ]
        )
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + validity)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(_constraints(self.hosts), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )

    def __repr__(self) -> str:
        return f"CertificateAuthority(hosts={sorted(self.hosts)!r})"

    @property
    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def leaf_for(self, host: str, *, now: datetime | None = None) -> Leaf:
        """The leaf for `host`, minted on first use and again near its end;
        CertificateRefused when `host` is not one of the authority's hosts."""
        try:
            name = ruled_host(host, "certificate")
        except ConfigError as error:
            raise CertificateRefused(str(error)) from None
        if name not in self.hosts:
            raise CertificateRefused(
                f"no certificate for {brief(name)}: no credential or request rule names it"
            )
        moment = _now(now)
        cached = self._leaves.get(name)
        if cached is not None and moment < cached.not_after - LEAF_RENEWAL:
            return cached
        leaf = self._mint(name, moment)
        self._leaves[name] = leaf
        return leaf

    def _mint(self, host: str, now: datetime) -> Leaf:
        key = ec.generate_private_key(ec.SECP256R1())
        start = now - CLOCK_SKEW
        end = min(start + self.leaf_validity, self.certificate.not_valid_after_utc)
        # A common name holds 64 characters at most, and one holding an address is
        # checked against the DNS name constraints by OpenSSL: the SAN is what clients
        # check, so those leaves have an empty subject (and a critical SAN).
        named = parse_address(host) is None and len(host) <= 64
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)] if named else [])
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([_general_name(host)]), critical=not named)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return Leaf(
            host,
            certificate.public_bytes(serialization.Encoding.PEM),
            key_pem,
            certificate.not_valid_after_utc,
        )

    def write_key(
        self, path: str | os.PathLike[str], *, outside: Iterable[str | os.PathLike[str]] = ()
    ) -> Path:
        """Write the CA's key (PEM, PKCS#8) to a new file at `path`, mode 0600, refusing
        an existing file, a symlink, or a path inside any of `outside` (every root a
        command may read)."""
        pem = self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return _write_new(path, pem, 0o600, outside)


def system_bundle_path() -> Path | None:
    """The system's CA bundle: where `ssl` says OpenSSL reads it, else the first of
    `SYSTEM_BUNDLES` that exists; None when there is none."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, *SYSTEM_BUNDLES):
        if candidate and os.path.isfile(candidate):
            return Path(candidate)
    return None


def combined_bundle(authority_pem: bytes, system_pem: bytes) -> bytes:
    """The system's bundle with the authority's certificate after it."""
    head = system_pem if not system_pem or system_pem.endswith(b"\n") else system_pem + b"\n"
    return head + b"# stockade harness CA (issue 41)\n" + authority_pem


def write_bundle(
    path: str | os.PathLike[str],
    authority: CertificateAuthority,
    *,
    system_pem: bytes | None = None,
    outside: Iterable[str | os.PathLike[str]] = (),
) -> Path:
    """Write the combined bundle (the system's and the authority's) to a new file at
    `path`, mode 0644 (a command reads it); `system_pem` defaults to the system's
    bundle, and ConfigError says so when there is none."""
    if system_pem is None:
        found = system_bundle_path()
        if found is None:
            raise ConfigError(
                "no system CA bundle found (looked where ssl says, and in "
                f"{', '.join(SYSTEM_BUNDLES)}); give one"
            )
        system_pem = found.read_bytes()
    return _write_new(path, combined_bundle(authority.certificate_pem, system_pem), 0o644, outside)


def trust_environment(bundle: str | os.PathLike[str]) -> dict[str, str]:
    """The variables a command gets so that its clients trust the bundle at `bundle`."""
    return dict.fromkeys(TRUST_VARIABLES, os.fspath(bundle))
