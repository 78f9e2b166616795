"""The per-harness CA (issue 41): leaves minted only for its hosts, verified by a real
TLS handshake in memory (`ssl.MemoryBIO`) against a client trusting the CA alone or the
combined bundle; the key written only where and how it is asked; the trust variables."""

from __future__ import annotations

import ipaddress
import os
import ssl
import stat
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from stockade.errors import ConfigError
from stockade.network import (
    TRUST_VARIABLES,
    CertificateAuthority,
    CertificateRefused,
    Leaf,
    combined_bundle,
    system_bundle_path,
    trust_environment,
    write_bundle,
)

HOSTS = ["API.github.com", "github.com", "127.0.0.1", "xn--bcher-kva.de"]


@pytest.fixture(scope="module")
def authority():
    return CertificateAuthority(HOSTS)


def client_trusting(pem: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=pem.decode())


def handshake(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str) -> bytes:
    """A TLS handshake between the two contexts through memory, then one message from
    client to server; what the server read."""
    client_in, client_out, server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client_end = client.wrap_bio(client_in, client_out, server_hostname=hostname)
    server_end = server.wrap_bio(server_in, server_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for side, end in (("client", client_end), ("server", server_end)):
            if not done[side]:
                try:
                    end.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        server_in.write(client_out.read())
        client_in.write(server_out.read())
        if all(done.values()):
            break
    assert all(done.values())
    assert client_end.selected_alpn_protocol() in (None, "http/1.1")
    client_end.write(b"GET / HTTP/1.1\r\n")
    server_in.write(client_out.read())
    return server_end.read(100)


@pytest.mark.parametrize("host", ["api.github.com", "github.com", "127.0.0.1", "xn--bcher-kva.de"])
def test_a_minted_leaf_passes_a_real_handshake_trusting_the_ca(authority, host):
    leaf = authority.leaf_for(host)
    client = client_trusting(authority.certificate_pem)
    assert handshake(leaf.server_context(), client, host) == b"GET / HTTP/1.1\r\n"


def test_a_leaf_is_for_its_host_only(authority):
    leaf = authority.leaf_for("github.com")
    client = client_trusting(authority.certificate_pem)
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        handshake(leaf.server_context(), client, "api.github.com")


def test_a_client_not_trusting_the_ca_refuses_the_leaf(authority):
    other = CertificateAuthority(["github.com"])
    client = client_trusting(other.certificate_pem)
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(authority.leaf_for("github.com").server_context(), client, "github.com")


@pytest.mark.parametrize(
    "host", ["evil.example", "x.github.com", "github.com.evil.example", "127.0.0.2", "::1"]
)
def test_no_leaf_for_a_host_no_rule_names(authority, host):
    with pytest.raises(CertificateRefused, match="no credential or request rule names it"):
        authority.leaf_for(host)


@pytest.mark.parametrize("host", ["", "bad host", "a\x00b", "*.github.com", "github.com:443"])
def test_no_leaf_for_what_is_not_a_host(authority, host):
    with pytest.raises(CertificateRefused):
        authority.leaf_for(host)


def test_a_leaf_is_cached_normalised_and_minted_again_near_its_end():
    start = datetime.now(UTC)
    authority = CertificateAuthority(["a.example"], now=start)
    first = authority.leaf_for("A.Example.", now=start)
    assert authority.leaf_for("a.example", now=start + timedelta(hours=20)) is first
    later = authority.leaf_for("a.example", now=start + timedelta(hours=23, minutes=30))
    assert later is not first
    assert later.certificate_pem != first.certificate_pem


def test_the_leaf_says_what_it_is(authority):
    before = datetime.now(UTC)
    leaf = authority.leaf_for("api.github.com")
    certificate = x509.load_pem_x509_certificate(leaf.certificate_pem)
    san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["api.github.com"]
    assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    lifetime = certificate.not_valid_after_utc - certificate.not_valid_before_utc
    assert lifetime <= timedelta(days=1)
    assert certificate.not_valid_before_utc <= before
    assert certificate.issuer == authority.certificate.subject
    ip = x509.load_pem_x509_certificate(authority.leaf_for("127.0.0.1").certificate_pem)
    san = ip.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert "key_pem" not in repr(leaf) and "PRIVATE" not in repr(leaf)


def test_a_long_host_has_no_common_name_but_a_critical_san():
    host = ".".join(["a" * 40, "b" * 40, "example"])
    authority = CertificateAuthority([host])
    certificate = x509.load_pem_x509_certificate(authority.leaf_for(host).certificate_pem)
    assert len(certificate.subject) == 0
    assert certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).critical
    client = client_trusting(authority.certificate_pem)
    handshake(authority.leaf_for(host).server_context(), client, host)


def test_a_leaf_never_outlives_the_ca():
    authority = CertificateAuthority(["a.example"], validity=timedelta(hours=2))
    leaf = authority.leaf_for("a.example")
    assert leaf.not_after == authority.certificate.not_valid_after_utc


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def rogue_leaf(key_pem: bytes, authority: CertificateAuthority, host: str) -> Leaf:
    """A leaf for `host` signed by the CA's own key, around `leaf_for`'s check: what a
    stolen key could make."""
    ca_key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(authority.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([_san(host)]), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return Leaf(
        host,
        certificate.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        now,
    )


def test_the_ca_is_name_constrained_to_its_hosts(authority, tmp_path):
    key_pem = authority.write_key(tmp_path / "ca.key").read_bytes()
    client = client_trusting(authority.certificate_pem)
    # The control: the same hand-made leaf for a host of the CA passes.
    handshake(rogue_leaf(key_pem, authority, "github.com").server_context(), client, "github.com")
    with pytest.raises(ssl.SSLCertVerificationError, match=r"name constraint|permitted"):
        handshake(
            rogue_leaf(key_pem, authority, "pypi.org").server_context(),
            client_trusting(authority.certificate_pem),
            "pypi.org",
        )
    with pytest.raises(ssl.SSLCertVerificationError, match="permitted"):
        handshake(rogue_leaf(key_pem, authority, "10.0.0.1").server_context(), client, "10.0.0.1")


def test_a_ca_naming_no_address_excludes_every_address(tmp_path):
    authority = CertificateAuthority(["github.com"])
    key_pem = authority.write_key(tmp_path / "ca.key").read_bytes()
    client = client_trusting(authority.certificate_pem)
    for address in ("127.0.0.1", "::1"):
        with pytest.raises(ssl.SSLCertVerificationError, match="excluded"):
            handshake(rogue_leaf(key_pem, authority, address).server_context(), client, address)


def test_without_memfd_the_leaf_loads_through_a_removed_private_file(authority, monkeypatch):
    monkeypatch.delattr(os, "memfd_create")
    made = []
    real_open = os.open

    def spying_open(path, flags, mode=0o777, *args, **kwargs):
        if str(path).endswith("leaf.pem"):
            made.append((path, mode))
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", spying_open)
    context = authority.leaf_for("github.com").server_context()
    monkeypatch.undo()
    [(path, mode)] = made
    assert mode == 0o600
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))
    handshake(context, client_trusting(authority.certificate_pem), "github.com")


def test_the_key_is_written_only_as_asked(authority, tmp_path):
    path = authority.write_key(tmp_path / "ca.key")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in path.read_bytes()
    # Never over an existing file, never through a symlink.
    with pytest.raises(FileExistsError):
        authority.write_key(path)
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        authority.write_key(tmp_path / "link")
    assert (tmp_path / "elsewhere").read_text() == ""
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    with pytest.raises(OSError):
        authority.write_key(tmp_path / "dangling")
    assert not (tmp_path / "nothing").exists()
    # Never inside a root a command may read, however the path is spelled.
    root = tmp_path / "workspace"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(root)
    for inside in (root / "ca.key", root / "sub" / "ca.key", tmp_path / "alias" / "ca.key"):
        with pytest.raises(ConfigError, match="lies inside"):
            authority.write_key(inside, outside=[root])
        assert not os.path.lexists(inside)
    authority.write_key(tmp_path / "beside.key", outside=[root])


def test_the_key_is_in_no_repr(authority):
    assert repr(authority) == (
        "CertificateAuthority(hosts=['127.0.0.1', 'api.github.com', 'github.com', "
        "'xn--bcher-kva.de'])"
    )
    assert not hasattr(authority, "__dict__")


def test_a_ca_for_no_host_or_a_bad_one_is_refused():
    with pytest.raises(ConfigError, match="no host"):
        CertificateAuthority([])
    with pytest.raises(ConfigError, match="without wildcard"):
        CertificateAuthority(["*.github.com"])


def test_the_combined_bundle_trusts_the_system_and_the_ca(authority, tmp_path):
    system = system_bundle_path()
    assert system is not None and system.is_file()
    path = write_bundle(tmp_path / "bundle.pem", authority)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    data = path.read_bytes()
    assert data.startswith(system.read_bytes())
    assert data.endswith(authority.certificate_pem)
    client = ssl.create_default_context(cafile=str(path))
    assert len(client.get_ca_certs()) > 1
    handshake(authority.leaf_for("github.com").server_context(), client, "github.com")
    with pytest.raises(FileExistsError):
        write_bundle(path, authority)


def test_a_given_system_bundle_is_used_and_joined_on_a_line():
    joined = combined_bundle(b"CA-PEM\n", b"SYSTEM")
    assert joined.startswith(b"SYSTEM\n#")
    assert joined.endswith(b"CA-PEM\n")


def test_the_trust_variables_name_the_bundle(tmp_path):
    path = tmp_path / "bundle.pem"
    environment = trust_environment(path)
    assert environment == {
        "SSL_CERT_FILE": str(path),
        "REQUESTS_CA_BUNDLE": str(path),
        "CURL_CA_BUNDLE": str(path),
        "NODE_EXTRA_CA_CERTS": str(path),
        "GIT_SSL_CAINFO": str(path),
        "PIP_CERT": str(path),
    }
    assert tuple(environment) == TRUST_VARIABLES
