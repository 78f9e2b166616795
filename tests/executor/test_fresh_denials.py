"""A "No such file or directory" a fresh runtime directory caused is a denial (issue 37,
"errors that say what happened"), the pure parts and the host facts on a scratch tree:
which lines say it and of what path, whether the wording created the path, the verdict
from what the host has, and the line the model reads.

With network off or allowlist a confined command sees /run, /var/run,
$XDG_RUNTIME_DIR and /tmp fresh and empty (`Wrapped.fresh`), so writing into a host
directory under /tmp fails as a missing directory; with network on the same write is
refused by the kernel (a denial signature). Both are the sandbox's doing.

The real-kernel counterpart is tests/executor/test_fresh_denials_kernel.py.
"""

from __future__ import annotations

import os

import pytest

from stockade.executor import _facts as facts_module
from stockade.executor._classify import fresh_view_causes
from stockade.executor._denials import HostSight, Missing, missing_lines, unseen
from stockade.executor._evidence import MAX_PATHS, sight
from stockade.executor._facts import WrapFacts
from stockade.executor.render import render_job, render_result
from stockade.messages import JobReport, ShellResult
from stockade.modes import fresh_view_cause
from stockade.sandbox.backends.bwrap import BWRAP_DENIAL, BWRAP_RULES
from stockade.sandbox.backends.landlock import LANDLOCK_NAMESPACED_DENIAL
from stockade.vocab import (
    DENIAL_INSTRUCTION,
    Enforcement,
    ExecutionPolicy,
    Network,
    SandboxMode,
    denial_marker,
)

WW, RO = SandboxMode.WORKSPACE_WRITE, SandboxMode.READ_ONLY
ENOENT = "No such file or directory"

# --- the lines ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "command", "path", "create"),
    [
        # What bash, coreutils, Python and Node print (measured in a fresh /tmp).
        (f"bash: line 1: /tmp/h/new: {ENOENT}", "printf x > /tmp/h/new", "/tmp/h/new", True),
        (f"bash: line 1: /tmp/h/new: {ENOENT}", "echo >> '/tmp/h/new'", "/tmp/h/new", True),
        (f"bash: line 1: /tmp/h/new: {ENOENT}", "cmd &>/tmp/h/new; x", "/tmp/h/new", True),
        # The same line from an exec, an input redirect, or a path the command spelled
        # otherwise: what it needed was the path itself.
        (f"bash: line 1: /tmp/h/f: {ENOENT}", "/tmp/h/f", "/tmp/h/f", False),
        (f"bash: line 1: /tmp/h/f: {ENOENT}", "wc < /tmp/h/f", "/tmp/h/f", False),
        (f"bash: line 1: /tmp/h/f: {ENOENT}", "printf x > /tmp/h/f.bak", "/tmp/h/f", False),
        (f"bash: line 1: /tmp/h/f: {ENOENT}", "printf x > $T/f", "/tmp/h/f", False),
        (f"bash: line 1: cd: /tmp/h: {ENOENT}", "cd /tmp/h", "/tmp/h", False),
        (f"cat: /tmp/h/f: {ENOENT}", "cat /tmp/h/f", "/tmp/h/f", False),
        (f"tee: /tmp/h/t: {ENOENT}", "echo | tee /tmp/h/t", "/tmp/h/t", True),
        (f"touch: cannot touch '/tmp/h/new': {ENOENT}", "", "/tmp/h/new", True),
        (f"mkdir: cannot create directory \u2018/tmp/h/d\u2019: {ENOENT}", "", "/tmp/h/d", True),
        (f"cp: cannot create regular file '/tmp/h/c': {ENOENT}", "", "/tmp/h/c", True),
        (f"ln: failed to create symbolic link '/tmp/h/l': {ENOENT}", "", "/tmp/h/l", True),
        (f"ls: cannot access '/tmp/h': {ENOENT}", "", "/tmp/h", False),
        (f"cp: cannot stat '/tmp/h/f': {ENOENT}", "", "/tmp/h/f", False),
        # Python says it the same for open(..., "w") and a read: the path must exist.
        (f"FileNotFoundError: [Errno 2] {ENOENT}: '/tmp/h/new'", "", "/tmp/h/new", False),
        ("Error: ENOENT: no such file or directory, open '/tmp/h/n'", "", "/tmp/h/n", False),
        ("Error: ENOENT: no such file or directory, mkdir '/tmp/h/d'", "", "/tmp/h/d", True),
        (f"cat: ../h/f: {ENOENT}", "cat ../h/f", "../h/f", False),
    ],
)
def test_what_a_missing_line_names(line: str, command: str, path: str, create: bool) -> None:
    (found,) = missing_lines(line + "\n", "", command)
    assert (found.path, found.create, found.on_stdout) == (path, create, False)


@pytest.mark.parametrize(
    "line",
    [
        f"cat: notes.txt: {ENOENT}",  # a bare word: in the workdir, which it sees as is
        f"mv: cannot move '/tmp/h/a' to '/tmp/h/b': {ENOENT}",  # which one was missing?
        f"python3: can't open file '/tmp/h/it\\'s.py': [Errno 2] {ENOENT}",
        "Error: ENOENT: no such file or directory, copyfile '/a' -> '/tmp/h/b'",
        "nothing to see here",
        "",
    ],
)
def test_lines_that_name_no_one_path(line: str) -> None:
    assert missing_lines(line + "\n", "", "") == ()


def test_stdout_lines_are_parsed_as_stdout() -> None:
    (found,) = missing_lines("", f"cat: /tmp/h/f: {ENOENT}\n", "")
    assert found.on_stdout


# --- the verdict -------------------------------------------------------------------------


def _sight(location: str, exists: bool = True, directory: bool = True, fresh: str = "/tmp"):
    return HostSight(location=location, fresh=fresh, exists=exists, directory=directory)


def test_a_create_needs_its_directory_on_the_host_beneath_the_fresh_one() -> None:
    line = Missing(line="", path="/tmp/h/new", on_stdout=False, create=True)
    facts = {"/tmp/h/new": _sight("/tmp/h/new", exists=False)}
    assert unseen([line], facts, ("/work",)) == (("/tmp/h", "/tmp"),)
    # Its directory is missing on the host too: a genuine missing directory.
    facts = {"/tmp/h/new": _sight("/tmp/h/new", exists=False, directory=False)}
    assert unseen([line], facts, ("/work",)) == ()
    # Right in the fresh directory: there the view refuses the create (a signature).
    top = Missing(line="", path="/tmp/new", on_stdout=False, create=True)
    assert unseen([top], {"/tmp/new": _sight("/tmp/new", exists=False)}, ()) == ()


def test_a_read_needs_the_path_itself_on_the_host() -> None:
    line = Missing(line="", path="/tmp/h/f", on_stdout=False)
    assert unseen([line], {"/tmp/h/f": _sight("/tmp/h/f")}, ()) == (("/tmp/h/f", "/tmp"),)
    # The host has its directory but not it: reading it fails there too.
    assert unseen([line], {"/tmp/h/f": _sight("/tmp/h/f", exists=False)}, ()) == ()


def test_no_facts_no_verdict() -> None:
    # A path beneath no fresh directory has no facts (`sight` leaves it out).
    line = Missing(line="", path="/etc/nope", on_stdout=False)
    assert unseen([line], {}, ()) == ()


def test_the_calls_own_roots_are_its_own_doing() -> None:
    # A file it made in its private temp directory (beneath /tmp) and removed, or one
    # another process put there meanwhile: what is missing in a root is not hidden.
    line = Missing(line="", path="/tmp/stockade-tmp-s/x", on_stdout=False)
    facts = {"/tmp/stockade-tmp-s/x": _sight("/tmp/stockade-tmp-s/x")}
    assert unseen([line], facts, ("/work", "/tmp/stockade-tmp-s")) == ()
    assert unseen([line], facts, ("/work",)) == (("/tmp/stockade-tmp-s/x", "/tmp"),)


def test_stdout_needs_a_merged_stderr_and_a_relative_path_no_cd() -> None:
    out = Missing(line="", path="/tmp/h/f", on_stdout=True)
    facts = {"/tmp/h/f": _sight("/tmp/h/f"), "h/f": _sight("/tmp/h/f")}
    assert unseen([out], facts, ()) == ()
    assert unseen([out], facts, (), merged=True) == (("/tmp/h/f", "/tmp"),)
    relative = Missing(line="", path="h/f", on_stdout=False)
    assert unseen([relative], facts, ()) == (("/tmp/h/f", "/tmp"),)
    assert unseen([relative], facts, (), moved=True) == ()


def test_each_hidden_path_once_in_order() -> None:
    lines = [
        Missing(line="", path=p, on_stdout=False, create=True)
        for p in ("/tmp/h/a", "/tmp/h/b", "/run/x/s")
    ]
    facts = {
        "/tmp/h/a": _sight("/tmp/h/a", exists=False),
        "/tmp/h/b": _sight("/tmp/h/b", exists=False),
        "/run/x/s": _sight("/run/x/s", exists=False, fresh="/run"),
    }
    assert unseen(lines, facts, ()) == (("/tmp/h", "/tmp"), ("/run/x", "/run"))


# --- the host facts (on a scratch tree standing in for /tmp) -----------------------------


def test_sight_asks_the_host_beneath_fresh_directories_only(scratch: str) -> None:
    base = os.path.realpath(scratch)
    fresh, elsewhere = os.path.join(base, "tmp"), os.path.join(base, "elsewhere")
    os.makedirs(os.path.join(fresh, "h"))
    os.mkdir(elsewhere)
    open(os.path.join(fresh, "h", "f"), "w").close()
    # An alias of the fresh directory (as /var/run is of /run): found through it.
    os.symlink(fresh, os.path.join(base, "alias"))
    text = "".join(
        f"cat: {path}: {ENOENT}\n"
        for path in (
            f"{fresh}/h/f",
            f"{fresh}/h/gone",
            f"{base}/alias/h/f",
            f"{elsewhere}/x/y",
            fresh,
            "../tmp/h/f",
        )
    )
    found = missing_lines(text, "", "")
    facts = sight(found, elsewhere, (fresh,))
    assert facts[f"{fresh}/h/f"] == HostSight(f"{fresh}/h/f", fresh, True, True)
    assert facts[f"{fresh}/h/gone"] == HostSight(f"{fresh}/h/gone", fresh, False, True)
    assert facts[f"{base}/alias/h/f"] == HostSight(f"{fresh}/h/f", fresh, True, True)
    assert facts["../tmp/h/f"] == HostSight(f"{fresh}/h/f", fresh, True, True)
    # Beneath no fresh directory, or the fresh directory itself (it is in sight).
    assert f"{elsewhere}/x/y" not in facts and fresh not in facts


def test_sight_is_bounded(scratch: str) -> None:
    fresh = os.path.realpath(scratch)
    text = "".join(f"cat: {fresh}/f{i}: {ENOENT}\n" for i in range(MAX_PATHS + 10))
    assert len(sight(missing_lines(text), "/", (fresh,))) == MAX_PATHS


# --- through the wrap facts: what a settled call is judged ------------------------------


def _facts(base: str, command: str, **kwargs: object) -> WrapFacts:
    root = os.path.join(base, "work")
    fields: dict[str, object] = dict(
        mode=WW,
        backend="bwrap",
        enforcement=Enforcement.FULL,
        denial_signatures=BWRAP_DENIAL,
        writable=(root,),
        fresh=(os.path.join(base, "tmp"),),
        workdir=root,
        command=command,
        network=Network.OFF,
    )
    fields.update(kwargs)
    return WrapFacts(**fields)  # type: ignore[arg-type]


@pytest.fixture
def host(scratch: str) -> str:
    """A scratch stand-in for the host: `tmp` (the fresh directory) holding `h/f`, and
    the call's root `work`."""
    base = os.path.realpath(scratch)
    os.makedirs(os.path.join(base, "tmp", "h"))
    os.mkdir(os.path.join(base, "work"))
    open(os.path.join(base, "tmp", "h", "f"), "w").close()
    return base


def test_a_write_into_a_hidden_host_directory_is_a_denial(host: str) -> None:
    target = f"{host}/tmp/h/new"
    facts = _facts(host, f"printf x > {target}")
    verdict = facts.judge(1, f"bash: line 1: {target}: {ENOENT}\n")
    assert verdict.denied and not verdict.read_denied
    assert verdict.unseen == ((f"{host}/tmp/h", f"{host}/tmp"),)


def test_a_read_of_a_hidden_host_file_is_a_denial_and_a_missing_one_is_not(host: str) -> None:
    facts = _facts(host, "cat it")
    verdict = facts.judge(1, f"cat: {host}/tmp/h/f: {ENOENT}\n")
    assert verdict.denied and verdict.unseen == ((f"{host}/tmp/h/f", f"{host}/tmp"),)
    genuine = facts.judge(1, f"cat: {host}/tmp/h/nope: {ENOENT}\n")
    assert not genuine.denied and genuine.unseen == ()
    deeper = facts.judge(1, f"touch: cannot touch '{host}/tmp/nope/x': {ENOENT}\n")
    assert not deeper.denied


def test_read_only_mode_and_allowlist_alike(host: str) -> None:
    facts = _facts(host, "", mode=RO, writable=(), network=Network.ALLOWLIST)
    verdict = facts.judge(1, f"touch: cannot touch '{host}/tmp/h/new': {ENOENT}\n")
    assert verdict.denied and verdict.unseen == ((f"{host}/tmp/h", f"{host}/tmp"),)


def test_a_hidden_deny_read_path_reads_as_deny_reads(host: str) -> None:
    # With network on it is refused as well: no "with_network" retry is offered for it.
    facts = _facts(host, "", unreadable=(f"{host}/tmp/h",))
    verdict = facts.judge(1, f"cat: {host}/tmp/h/f: {ENOENT}\n")
    assert verdict.denied and verdict.read_denied and verdict.unseen == ()
    open(f"{host}/tmp/g", "w").close()
    mixed = facts.judge(1, f"cat: {host}/tmp/h/f: {ENOENT}\ncat: {host}/tmp/g: {ENOENT}\n")
    assert mixed.read_denied and mixed.unseen == ((f"{host}/tmp/g", f"{host}/tmp"),)


def test_no_fresh_directories_no_attribution(host: str) -> None:
    # Network on, the plain tier, danger-full-access: the command saw the host's /tmp.
    line = f"cat: {host}/tmp/h/f: {ENOENT}\n"
    assert not _facts(host, "", fresh=()).judge(1, line).denied
    assert not WrapFacts.unconfined().judge(1, line).denied
    assert not _facts(host, "", workdir=None).judge(1, line).denied


def test_a_runner_failure_still_outranks(host: str) -> None:
    facts = _facts(host, "", runner_failure_rules=BWRAP_RULES)
    stderr = f"bwrap: Can't mkdir {host}/tmp/h/x: {ENOENT}\n"
    verdict = facts.judge(1, stderr)
    assert verdict.runner_failed and not verdict.denied and verdict.unseen == ()


def test_the_host_is_asked_only_for_a_missing_line(host: str, monkeypatch) -> None:
    def refuse(*args: object) -> object:
        raise AssertionError("asked the host")

    monkeypatch.setattr(facts_module, "sight", refuse)
    facts = _facts(host, "true", denial_signatures=LANDLOCK_NAMESPACED_DENIAL)
    assert not facts.judge(0, "", "ok\n").denied
    assert not facts.judge(2, "grep: bad regex\n").denied
    # A signature line is judged as before, with nothing asked about fresh views.
    assert facts.judge(1, "bash: line 1: x: Permission denied\n").unseen == ()


def test_a_signature_denial_keeps_the_lines_of_what_was_hidden_too(host: str) -> None:
    facts = _facts(host, "")
    stderr = (
        f"touch: cannot touch '/etc/passwd-x': Read-only file system\n"
        f"cat: {host}/tmp/h/f: {ENOENT}\n"
    )
    verdict = facts.judge(1, stderr)
    assert verdict.denied and verdict.unseen == ((f"{host}/tmp/h/f", f"{host}/tmp"),)


# --- what the model reads ----------------------------------------------------------------

LINE = fresh_view_cause("/tmp/tmpabc", "/tmp", "off")


def test_the_cause_text() -> None:
    assert LINE.startswith(
        "[sandbox: /tmp/tmpabc lies in /tmp, which this command sees fresh and empty "
        "(network off), so the host's /tmp/tmpabc was out of its sight."
    )
    assert "$TMPDIR or the workspace" in LINE and '"with_network"' in LINE
    assert '"danger-full-access"' in LINE
    assert "\n" not in LINE and LINE.endswith("]")
    assert fresh_view_causes((("/tmp/tmpabc", "/tmp"),), Network.OFF) == (LINE,)
    many = tuple((f"/tmp/d{i}", "/tmp") for i in range(5))
    assert len(fresh_view_causes(many, Network.ALLOWLIST)) == 3
    assert "(network allowlist)" in fresh_view_causes(many, Network.ALLOWLIST)[0]


def _result(**fields: object) -> ShellResult:
    base: dict[str, object] = dict(
        exit_code=1,
        stdout="",
        stderr=f"bash: line 1: /tmp/tmpabc/f: {ENOENT}\n",
        denied=True,
        runner_failed=False,
        timed_out=False,
        cancelled=False,
        mode=WW,
        backend="bwrap",
        enforcement=Enforcement.FULL,
        duration=0.1,
        network=Network.OFF,
        writable=("/work",),
        unseen=(("/tmp/tmpabc", "/tmp"),),
    )
    base.update(fields)
    return ShellResult(**base)  # type: ignore[arg-type]


def test_render_ends_with_the_marker_and_the_cause() -> None:
    text = render_result(_result())
    assert text.endswith(f"[exit code: 1]\n{denial_marker(WW)}\n{DENIAL_INSTRUCTION}\n{LINE}")


def test_a_job_says_it_too() -> None:
    report = JobReport(
        id="job-1",
        command="printf x > /tmp/tmpabc/f",
        policy=ExecutionPolicy(mode=WW, workspace_root="/work"),
        state="exited",
        started_at=0.0,
        ended_at=1.0,
        stdout="",
        stderr=f"bash: line 1: /tmp/tmpabc/f: {ENOENT}\n",
        stdout_dropped=0,
        stderr_dropped=0,
        mode=WW,
        backend="bwrap",
        enforcement=Enforcement.FULL,
        exit_code=1,
        denied=True,
        network=Network.OFF,
        unseen=(("/tmp/tmpabc", "/tmp"),),
    )
    assert render_job(report).endswith(f"{DENIAL_INSTRUCTION}\n{LINE}")
