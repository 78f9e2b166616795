"""Issue 41: a confined command never holds a real value, wherever it looks: its
environment, `/proc` (the harness's environ and memory, every process it sees, its own
clients' memory after an answer came back), the files it can read, and what the
harness keeps (the session log, each result). The scans look for the shape of a real
value (`support.SECRET_PATTERN`), so the command is never handed one; each has a
control that shows it finds what is there.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from .support import (
    API,
    API_SECRET_VAR,
    FIND_NEW,
    GIT_SECRET_VAR,
    HEAD_SECRET_VAR,
    PIP_SECRET_VAR,
    PLACEHOLDER_RE,
    SECRET_PATTERN,
    SECRET_PREFIX,
    Rig,
    host_files_with_secrets,
    leaks,
    run_harness,
)

SCAN_PROC = Path(__file__).with_name("_scan_proc.py")
DECOY = "creds-decoy.txt"
TRUST_VARIABLES = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "PIP_CERT",
)


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _json_line(text: str) -> dict:
    lines = [line for line in text.splitlines() if line.startswith('{"answer"')]
    assert lines, text
    return json.loads(lines[-1])


def _environment(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, equals, value = line.partition("=")
        if equals and name.isidentifier():
            found.setdefault(name, value)
    return found


def test_the_command_never_holds_a_real_value(variant: str, origins: Rig):
    decoy = origins.base / "decoy" / DECOY
    decoy.parent.mkdir()
    decoy.write_text(f"a value shaped like a real one: {SECRET_PREFIX}{'0' * 32}\n")
    since = int(origins.started) - 2
    scan = f"{sys.executable} -I -S {SCAN_PROC} {origins.url(API, '/repos/org/x')} @HARNESS_PID@"
    find = (
        FIND_NEW.replace("@SINCE@", str(since))
        + f" | xargs -0 -r grep -alE '{SECRET_PATTERN}' 2>/dev/null; echo files-done"
    )
    commands = [
        "env; echo ---; tr '\\0' '\\n' < /proc/self/environ; echo ---; set",
        scan,
        find,
        'ls -la "$(dirname "$SSL_CERT_FILE")"; '
        'grep -l "PRIVATE KEY" "$(dirname "$SSL_CERT_FILE")"/* && echo key-found; echo ls-done',
    ]
    # The controls: the same proc scan run unconfined finds the values in the
    # harness's environ and memory.
    control = f"{sys.executable} -I -S {SCAN_PROC} - @HARNESS_PID@"
    outcome = run_harness(origins, variant, commands, unconfined=(control,))
    texts = [outcome.text(index) for index in range(len(commands))]
    everything = "\n".join(texts)
    assert not leaks(origins, everything), "a result holds a real value"

    # The environment: placeholders and the trust variables, never a real value.
    environment = _environment(texts[0])
    for name in ("API_TOKEN", "GIT_TOKEN", "PIP_TOKEN"):
        assert PLACEHOLDER_RE.fullmatch(environment.get(name, "").encode()), (name, environment)
    for name in (HEAD_SECRET_VAR, GIT_SECRET_VAR, PIP_SECRET_VAR):
        assert name not in environment, name
    bundles = {environment.get(name) for name in TRUST_VARIABLES}
    assert len(bundles) == 1 and None not in bundles, bundles

    # /proc: the harness's environ and memory are out of reach, and nothing the
    # command sees (itself after an answer, its shell, its siblings) holds a value.
    confined = _json_line(texts[1])
    assert json.loads(confined["answer"])["authorised"] is True, confined
    assert confined["hits"] == [], confined
    assert confined["memory_read"] >= 1, confined  # it did read its own memory
    harness = confined["harness"]
    if harness != "no such process":  # Landlock: the pid is seen, its contents are not
        assert harness["environ"] != "read" and not harness["mem"].startswith("read"), harness
    control_found = _json_line(outcome.controls[0])
    assert _digest(origins.secrets[API_SECRET_VAR]) in control_found["hits"], control_found
    assert control_found["harness"]["mem"].startswith("read"), control_found

    # Files: nothing changed since the rig started holds a value; the decoy planted
    # outside the root is found (the scan reaches such places).
    assert "files-done" in texts[2], texts[2]
    listed = [line for line in texts[2].splitlines() if line.startswith("/")]
    assert str(decoy) in listed, texts[2]
    others = [path for path in listed if not path.endswith("/" + DECOY)]
    assert others == [], others

    # The bundle's directory holds certificates only: no key file anywhere.
    assert "ls-done" in texts[3] and "key-found" not in texts[3], texts[3]

    # What the harness keeps: the session log, and nothing on the host's disk.
    assert outcome.log_text and not leaks(origins, outcome.log_text)
    assert host_files_with_secrets(origins, since) == []


def test_the_harness_variables_are_withheld_under_any_env_policy(variant: str, origins: Rig):
    """An env policy that lets every variable through (`inherit: all`, no default
    excludes) still gives the command the placeholders, never the harness's real
    values, under their own names or others."""
    extra = (
        "\n    env:\n      inherit: all\n      keep_default_excludes: false"
        "\n      set: {COPY_NAME: ok}"
    )
    outcome = run_harness(
        origins, variant, ["env; tr '\\0' '\\n' < /proc/self/environ"], extra_bash=extra
    )
    text = outcome.text(0)
    assert "COPY_NAME=ok" in text, text  # the policy took effect
    assert not leaks(origins, text)
    environment = _environment(text)
    assert PLACEHOLDER_RE.fullmatch(environment.get("API_TOKEN", "").encode()), environment
    assert not {HEAD_SECRET_VAR, GIT_SECRET_VAR, PIP_SECRET_VAR} & set(environment)
    assert os.environ.get(API_SECRET_VAR) is None  # the test process never held them
