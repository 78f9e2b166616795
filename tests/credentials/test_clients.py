"""Issue 41 end to end: everyday clients in a confined command use a credential they
never hold. The command holds a placeholder (or nothing: the header form); the proxy
terminates TLS for the ruled host, puts the real value into that request's header, and
the origin reads the real value. Real kernel, bwrap and Landlock, through the harness.
"""

from __future__ import annotations

import json
import subprocess
import sys

from .support import (
    API,
    API_RULE,
    API_SECRET_VAR,
    GIT,
    GIT_SECRET_VAR,
    HEAD,
    HEAD_SECRET_VAR,
    PIP_SECRET_VAR,
    PLACEHOLDER_RE,
    PYPI,
    Rig,
    basic_password,
    leaks,
    run_harness,
    unconfined,
)

PY = f"{sys.executable} -I"


def _answers(text: str) -> list[dict]:
    """The origin's JSON answers a command printed, in order."""
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"origin"')]


def test_curl_urllib_and_requests_call_an_api_with_a_placeholder(backend: str, origins: Rig):
    url = origins.url(API, "/repos/org/x")
    commands = [
        'echo "token=$API_TOKEN"',
        f'curl -sS --max-time 20 -H "Authorization: Bearer $API_TOKEN" {url}',
        f'{PY} -S -c "import os, urllib.request as u; '
        f"r = u.Request('{url}', headers={{'Authorization': 'Bearer ' + os.environ['API_TOKEN']}}); "
        f"print(u.urlopen(r, timeout=20).read().decode(), end='')\"",
        f'{PY} -c "import os, requests; '
        f"r = requests.get('{url}', headers={{'Authorization': 'Bearer ' + os.environ['API_TOKEN']}}, timeout=20); "
        f"print(r.text, end='')\"",
        f"curl -sS --max-time 20 {origins.url(HEAD, '/anything')}",
        # SOCKS5 to the ruled host: terminated the same way
        f"curl -sS --max-time 20 --socks5-hostname 127.0.0.1:3128 "
        f'-H "Authorization: Bearer $API_TOKEN" {url}',
    ]
    outcome = run_harness(origins, backend, commands)
    texts = [outcome.text(index) for index in range(len(commands))]

    placeholder = PLACEHOLDER_RE.search(texts[0].encode())
    assert placeholder is not None, texts[0]
    for index in (1, 2, 3, 5):
        answers = _answers(texts[index])
        assert answers and answers[0]["authorised"] is True, texts[index]
        assert answers[0]["path"] == "/repos/org/x"
    assert "key ok" in texts[4], texts[4]

    api_seen = origins.origins[API].seen
    secret = origins.secrets[API_SECRET_VAR]
    assert [seen.header("authorization") for seen in api_seen] == [f"Bearer {secret}"] * 4
    assert [seen.header("x-api-key") for seen in origins.origins[HEAD].seen] == [
        origins.secrets[HEAD_SECRET_VAR]
    ]
    for name, seen in origins.all_seen():
        assert placeholder.group() not in seen.raw, (name, seen)

    requests = outcome.requests()
    api = [event for event in requests if event["host"] == API]
    assert [(e["method"], e["path"], e["allowed"]) for e in api] == [
        ("GET", "/repos/org/x", True)
    ] * 4, requests
    assert all(e["rule"] == API_RULE and e["credentials"] == [API_SECRET_VAR] for e in api)
    assert all(e["port"] == origins.port(API) for e in api)
    head = [event for event in requests if event["host"] == HEAD]
    assert [(e["allowed"], e["credentials"]) for e in head] == [(True, [HEAD_SECRET_VAR])]

    assert not leaks(origins, "".join(texts)), "a result holds a real value"
    assert not leaks(origins, outcome.log_text), "the session log holds a real value"


def test_git_clones_and_pushes_with_a_placeholder_password(backend: str, origins: Rig):
    """git sends the placeholder as the Basic password (from a credential helper reading
    GIT_TOKEN); the proxy swaps it inside the Basic credential; `git http-backend`
    behind TLS reads the real token, and the push lands in the bare repository."""
    url = origins.url(GIT, "/repo.git")
    helper = "!f() { echo username=x; echo password=$GIT_TOKEN; }; f"
    git = (
        f"git -c credential.helper='{helper}' -c user.email=agent@creds.test "
        "-c user.name=agent -c init.defaultBranch=main"
    )
    command = (
        "set -e; "
        f"{git} clone -q {url} clone; cd clone; "
        "echo pushed by a confined command > PUSHED; "
        f"{git} add PUSHED; {git} commit -qm 'push through the proxy'; "
        f"{git} push -q origin HEAD:main; echo push-done"
    )
    outcome = run_harness(origins, backend, [command])
    text = outcome.text(0)
    assert "push-done" in text, text
    log = subprocess.run(
        ["git", "-C", str(origins.bare), "log", "--format=%s", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert log.splitlines()[0] == "push through the proxy", log

    seen = origins.origins[GIT].seen
    secret = origins.secrets[GIT_SECRET_VAR]
    authorised = [s for s in seen if basic_password(s) == secret]
    assert any(s.method == "POST" and "git-receive-pack" in s.path for s in authorised), [
        (s.method, s.path) for s in seen
    ]
    assert all(basic_password(s) in (None, secret) for s in seen), "the origin read a placeholder"
    requests = [event for event in outcome.requests() if event["host"] == GIT]
    assert requests and all(event["allowed"] for event in requests), requests
    with_credential = [event for event in requests if event["credentials"] == [GIT_SECRET_VAR]]
    assert any(event["method"] == "POST" for event in with_credential), requests
    assert not leaks(origins, text + outcome.log_text)


def test_pip_installs_from_an_index_that_wants_the_token(backend: str, origins: Rig):
    """pip reads the placeholder from the index URL's password and sends it as a Basic
    credential in the Authorization header (never in the request target); the index
    reads the real token, and the wheel installs."""
    index = f"https://x:$PIP_TOKEN@{PYPI}:{origins.port(PYPI)}/simple"
    command = (
        "set -e; "
        f"{PY} -m pip install --no-deps --no-cache-dir --no-input --disable-pip-version-check "
        f'-q --target site --index-url "{index}" demo; '
        f"PYTHONPATH=site {PY.replace(' -I', '')} -c 'import demo; print(\"demo\", demo.VALUE)'"
    )
    outcome = run_harness(origins, backend, [command])
    text = outcome.text(0)
    assert "demo 41" in text, text
    seen = origins.origins[PYPI].seen
    secret = origins.secrets[PIP_SECRET_VAR]
    fetched = [s.path for s in seen if basic_password(s) == secret]
    assert any(path.endswith(".whl") for path in fetched), [
        (s.path, basic_password(s)) for s in seen
    ]
    assert all(PLACEHOLDER_RE.search(s.path.encode()) is None for s in seen)
    requests = [event for event in outcome.requests() if event["host"] == PYPI]
    assert requests and all(event["allowed"] for event in requests), requests
    assert all(event["credentials"] == [PIP_SECRET_VAR] for event in requests), requests
    assert not leaks(origins, text + outcome.log_text)


def test_the_origins_want_the_real_token(origins: Rig):
    """The control: run unconfined, the same clients get in with the real value (each
    origin works, and sees what a client sends) and are refused with a placeholder or
    nothing (each origin checks)."""
    api, git, pypi = (origins.secrets[v] for v in (API_SECRET_VAR, GIT_SECRET_VAR, PIP_SECRET_VAR))
    ca = str(origins.upstream_ca)
    trust = {
        "SSL_CERT_FILE": ca,
        "CURL_CA_BUNDLE": ca,
        "GIT_SSL_CAINFO": ca,
        "PIP_CERT": ca,
        "REQUESTS_CA_BUNDLE": ca,
    }
    fake = "stockade-placeholder-" + "0" * 40
    url = origins.url(API, "/repos/org/x")
    helper = "!f() { echo username=x; echo password=$GIT_TOKEN; }; f"
    git_cmd = f"git -c credential.helper='{helper}' -c user.email=a@b -c user.name=a"
    index = f"https://x:$PIP_TOKEN@{PYPI}:{origins.port(PYPI)}/simple"
    pip = (
        f"{PY} -m pip download --no-deps --no-cache-dir --no-input --disable-pip-version-check "
        f'-q -d dl --index-url "{index}" demo'
    )
    script = "; ".join(
        [
            f'curl -sS -o /dev/null -w "api %{{http_code}}\\n" -H "Authorization: Bearer $API_TOKEN" {url}',
            f'curl -sS -o /dev/null -w "head %{{http_code}}\\n" -H "X-Api-Key: $HEAD" {origins.url(HEAD)}',
            f"{git_cmd} ls-remote {origins.url(GIT, '/repo.git')} >/dev/null 2>&1 && echo git ok || echo git refused",
            f"{pip} >/dev/null 2>&1 && echo pip ok || echo pip refused",
        ]
    )
    real = {
        **trust,
        "API_TOKEN": api,
        "HEAD": origins.secrets[HEAD_SECRET_VAR],
        "GIT_TOKEN": git,
        "PIP_TOKEN": pypi,
        "GIT_TERMINAL_PROMPT": "0",
    }
    placeholder = {
        **trust,
        "API_TOKEN": fake,
        "HEAD": fake,
        "GIT_TOKEN": fake,
        "PIP_TOKEN": fake,
        "GIT_TERMINAL_PROMPT": "0",
    }
    with_real = unconfined(origins, script, real)
    with_placeholder = unconfined(origins, "rm -rf dl; " + script, placeholder)
    assert with_real.split() == ["api", "200", "head", "200", "git", "ok", "pip", "ok"], with_real
    assert with_placeholder.split() == [
        "api",
        "401",
        "head",
        "401",
        "git",
        "refused",
        "pip",
        "refused",
    ], with_placeholder
