"""Issue 41 end to end: an origin of a ruled host that reflects its request's headers
(an echo endpoint, an error page quoting Authorization) in every form an origin could
use: as itself, JSON-, percent- and HTML-escaped, base64 at each alignment, UTF-16, the
Basic blob, gzip-compressed although identity was asked, and in Set-Cookie, Location
and a header of its own. The confined command (curl, requests) reads the placeholder
back, never the real value in any form, and the log says the answer was scrubbed. The
control: the same origin, asked directly with the real value, reflects it in every form.
Real kernel, bwrap and Landlock, through the harness.
"""

from __future__ import annotations

import base64
import re
import sys

from .support import (
    API,
    API_SECRET_VAR,
    HEAD,
    HEAD_SECRET_VAR,
    PLACEHOLDER_RE,
    Rig,
    leaked_forms,
    leaks,
    reflected_forms,
    run_harness,
)

PY = f"{sys.executable} -I"


def _decoded(text: str) -> bytes:
    """What a command printed through `base64 -w0` (framed by `<<` and `>>`)."""
    found = re.search(r"<<([A-Za-z0-9+/=]*)>>", text)
    assert found is not None, text
    return base64.b64decode(found.group(1))


def _framed(command: str) -> str:
    return f"printf '<<%s>>' \"$({command} | base64 -w0)\""


def test_a_reflected_credential_reaches_the_command_in_no_form(backend: str, origins: Rig):
    echo = origins.url(API, "/repos/org/echo")
    bearer = '-H "Authorization: Bearer $API_TOKEN"'
    commands = [
        _framed(f"curl -sS --max-time 20 -D - {bearer} {echo}"),
        _framed(f"curl -sS --max-time 20 --compressed -D - {bearer} {echo}-gz"),
        _framed(
            f'{PY} -c "import os, sys, requests; '
            f"r = requests.get('{echo}', headers={{'Authorization': 'Bearer ' + os.environ['API_TOKEN']}}, timeout=20); "
            'sys.stdout.buffer.write(repr(dict(r.headers)).encode() + r.content)"'
        ),
        _framed(f"curl -sS --max-time 20 -D - {origins.url(HEAD, '/echo')}"),
    ]
    # The control: the same origin, reached directly with the real value (the
    # harness's own API_TOKEN is the real one), reflects it in every form.
    control = _framed(f"curl -sS --max-time 20 -D - --cacert {origins.upstream_ca} {bearer} {echo}")
    outcome = run_harness(origins, backend, commands, unconfined=(control,))
    secret = origins.secrets[API_SECRET_VAR]

    reflected = _decoded(outcome.controls[0])
    forms = reflected_forms(f"Bearer {secret}")
    assert len(leaked_forms(origins, reflected)) >= len(forms), outcome.controls[0][:300]

    for index in range(len(commands)):
        printed = _decoded(outcome.text(index))
        assert leaked_forms(origins, printed) == [], (index, printed[:600])
        assert leaks(origins, printed) == [] and leaks(origins, outcome.text(index)) == []
        assert b"stockade-realsecret-" not in printed
    # The command read its own placeholder back where the value was reflected.
    for index in range(3):
        printed = _decoded(outcome.text(index))
        assert PLACEHOLDER_RE.search(printed), printed[:300]
        assert re.search(
            rb"(?i)x-echo: Bearer stockade-placeholder-|'X-Echo': 'Bearer stockade-placeholder-",
            printed,
        ), printed[:300]
    assert b"stockade-withheld-" + HEAD_SECRET_VAR.encode() in _decoded(outcome.text(3))

    # The origins read the real values (and were asked for identity).
    api_seen = origins.origins[API].seen
    assert [seen.header("authorization") for seen in api_seen] == [f"Bearer {secret}"] * 4
    assert {seen.header("accept-encoding") for seen in api_seen[:3]} == {"identity"}
    assert origins.origins[HEAD].seen[0].header("x-api-key") == origins.secrets[HEAD_SECRET_VAR]

    # The log: each answer's scrubbing, counted, never a value.
    for index in range(len(commands)):
        scrubbed = [e for e in outcome.of(index, outcome.requests()) if e["scrubbed"]]
        assert len(scrubbed) == 1, outcome.of(index, outcome.requests())
        assert scrubbed[0]["scrubbed"] >= len(forms) and scrubbed[0]["allowed"] is True
    assert leaks(origins, outcome.log_text) == []
    assert leaked_forms(origins, outcome.log_text) == []
