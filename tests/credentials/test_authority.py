"""Issue 41: the harness's CA. A command cannot make the proxy present a certificate
from it for a host no rule names (whatever name it asks for in SNI, through CONNECT or
SOCKS5); a host no rule names shows its own certificate (the blind tunnel), which the
command's default trust refuses; the CA is name-constrained to the ruled hosts; the
bundle the command trusts cannot be changed by it. A client that refuses stockade's
certificate (it pins its own store) fails with the reason in the log; one that offers
HTTP/2 falls back to HTTP/1.1.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.x509.oid import ExtensionOID

from .support import API, BLIND, OTHER, RULED, UNLISTED, Rig, host_files_since, run_harness

PROBE = f"{sys.executable} -I -S {Path(__file__).with_name('_tls_probe.py')}"
LAST_CERT = (
    f"{sys.executable} -I -S -c \"import os; text = open(os.environ['SSL_CERT_FILE']).read(); "
    "print('BUNDLE-CA ' + '-----BEGIN' + text.rsplit('-----BEGIN', 1)[1].replace(chr(10), '|'))\""
)
PRIVATE_KEY = re.compile(
    rb"-----BEGIN [A-Z ]*PRIVATE KEY-----.+?-----END [A-Z ]*PRIVATE KEY-----", re.S
)


def _probes(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("PROBE ")]


def _names(cert: x509.Certificate) -> set[str]:
    try:
        sans = cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME)
    except x509.ExtensionNotFound:
        return set()
    return set(sans.value.get_values_for_type(x509.DNSName))


def test_no_certificate_for_a_host_no_rule_names(backend: str, origins: Rig):
    blind, api = origins.port(BLIND), origins.port(API)
    probes = [
        ("connect", BLIND, blind, BLIND),
        ("connect", BLIND, blind, API),
        ("connect", BLIND, blind, "evil.example"),
        ("socks5", BLIND, blind, API),
        ("connect", API, api, API),
        ("socks5", API, api, API),
        ("connect", API, api, BLIND),
        ("connect", API, api, "evil.example"),
        ("connect", API, api, "-"),
        ("connect", "127.0.0.1", api, API),  # the ruled origin by its address
        ("connect", UNLISTED, origins.port(UNLISTED), UNLISTED),
    ]
    command = "; ".join(f"{PROBE} {face} {host} {port} {sni}" for face, host, port, sni in probes)
    commands = [
        LAST_CERT + "; " + command,
        f"curl -sS --max-time 20 {origins.url(BLIND, '/')}; echo exit=$?",
    ]
    outcome = run_harness(origins, backend, commands)
    text = outcome.text(0)
    bundle_ca_line = next(line for line in text.splitlines() if line.startswith("BUNDLE-CA "))
    harness_ca = x509.load_pem_x509_certificate(
        bundle_ca_line[len("BUNDLE-CA ") :].replace("|", "\n").encode()
    )
    origin_ca = x509.load_pem_x509_certificate(origins.ca.cert_pem.bytes())
    assert harness_ca.subject != origin_ca.subject

    # The CA is name-constrained to the ruled hosts.
    constraints = harness_ca.extensions.get_extension_for_oid(ExtensionOID.NAME_CONSTRAINTS).value
    permitted = {
        name.value
        for name in constraints.permitted_subtrees or ()
        if isinstance(name, x509.DNSName)
    }
    assert permitted == set(RULED), permitted

    results = _probes(text)
    assert [r["probe"][:4] for r in results] == [list(p) for p in probes], results
    for (_, host, _, _), result in zip(probes, results, strict=True):
        if host == UNLISTED:
            assert "200" not in result["answer"] and "reply 0" not in result["answer"], result
            continue
        if result["handshake"] != "ok":
            continue  # no certificate at all: nothing minted
        cert = x509.load_der_x509_certificate(base64.b64decode(result["cert"]))
        if cert.issuer == harness_ca.subject:
            # Only a ruled host's own name, and only when the command asked for it.
            assert host in RULED and _names(cert) <= {host}, (result, _names(cert))
        else:
            assert cert.issuer == origin_ca.subject, (result, cert.issuer)
            assert host not in RULED, result  # a ruled host is never reached blindly
    # The plain cases work: the blind host shows its own certificate, and the ruled
    # host (by CONNECT and by SOCKS5, asked by its name) a leaf of the harness's CA.
    for index in (0, 4, 5):
        assert results[index]["handshake"] == "ok", results[index]
    # A tunnel to another name or the address whose SNI names a ruled host is cut
    # before its handshake ends (a blind route around the ruled host's rules).
    for index in (1, 3, 9):
        assert results[index]["handshake"] != "ok", results[index]
    cut = [e for e in outcome.of(0, outcome.requests()) if "SNI names" in e["reason"]]
    assert [(e["host"], e["allowed"]) for e in cut] == [
        (BLIND, False),
        (BLIND, False),
        ("127.0.0.1", False),
    ], cut

    # The CA's key is nowhere on disk: no file changed during the run holds a private
    # key that goes with the harness CA's certificate.
    ca_public = harness_ca.public_key().public_bytes(
        Encoding.DER, PublicFormat.SubjectPublicKeyInfo
    )
    for path, content in host_files_since(origins.started - 2):
        for block in PRIVATE_KEY.findall(content):
            try:
                key = serialization.load_pem_private_key(block, password=None)
            except (ValueError, TypeError):
                continue
            public = key.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
            assert public != ca_public, f"the harness CA's key is in {path}"

    # The command's default trust refuses the blind origin's certificate (curl: 60).
    assert "exit=60" in outcome.text(1), outcome.text(1)
    assert origins.origins[UNLISTED].connections == 0


def test_the_trusted_bundle_is_read_only(variant: str, origins: Rig):
    command = (
        'stat -c "mode=%a owner=%u" "$SSL_CERT_FILE"; echo "uid=$(id -u)"; '
        'echo x >> "$SSL_CERT_FILE" && echo appended; '
        ': > "$SSL_CERT_FILE" && echo truncated; '
        'touch "$(dirname "$SSL_CERT_FILE")/planted" && echo planted; '
        'mv "$SSL_CERT_FILE" "$SSL_CERT_FILE.old" && echo moved; '
        f"curl -sS --max-time 20 -o /dev/null -w 'code=%{{http_code}}\\n' "
        f'-H "Authorization: Bearer $API_TOKEN" {origins.url(API, "/repos/org/x")}'
    )
    outcome = run_harness(origins, variant, [command])
    text = outcome.text(0)
    # The control: the file's mode lets its owner write, and the command runs as its
    # owner; only the sandbox stands in the way.
    assert "mode=644 owner=0" in text and "uid=0" in text, text
    for verb in ("appended", "truncated", "planted", "moved"):
        assert verb not in text.split(), text
    assert "code=200" in text, text  # the bundle still works


def test_a_client_that_refuses_the_certificate_is_told_why(backend: str, origins: Rig):
    """curl told to trust only the system's store refuses stockade's leaf: its request
    fails, and the log says which host and why. A client offering only HTTP/2 gets no
    h2; curl offering h2 and HTTP/1.1 falls back and is served."""
    url = origins.url(API, "/repos/org/x")
    commands = [
        f"curl -sS --max-time 20 --cacert /etc/ssl/certs/ca-certificates.crt "
        f'-H "Authorization: Bearer $API_TOKEN" {url}; echo exit=$?',
        f"{PROBE} connect {API} {origins.port(API)} {API} h2",
        f"curl -sS --max-time 20 --http2 -o /dev/null -w 'code=%{{http_code}} v=%{{http_version}}\\n' "
        f'-H "Authorization: Bearer $API_TOKEN" {url}',
        f"curl -sS --max-time 20 -o /dev/null -w 'code=%{{http_code}}\\n' {origins.url(OTHER, '/x')}",
    ]
    outcome = run_harness(origins, backend, commands)
    assert "exit=60" in outcome.text(0), outcome.text(0)
    refused = [e for e in outcome.of(0, outcome.requests()) if not e["allowed"]]
    assert refused and refused[0]["method"] == "CONNECT", outcome.of(0, outcome.requests())
    assert "refused stockade's certificate" in refused[0]["reason"], refused[0]
    assert API in refused[0]["reason"], refused[0]

    (h2,) = _probes(outcome.text(1))
    assert h2["handshake"] != "ok" or h2["alpn"] != "h2", h2
    if h2["handshake"] != "ok":
        why = [e["reason"] for e in outcome.of(1, outcome.requests()) if not e["allowed"]]
        assert any("HTTP/2" in reason for reason in why), why

    assert "code=200 v=1.1" in outcome.text(2), outcome.text(2)
    assert "code=200" in outcome.text(3), outcome.text(3)
    assert [s.path for s in origins.origins[API].seen] == ["/repos/org/x"]
