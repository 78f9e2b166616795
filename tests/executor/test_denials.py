"""Denial attribution, the pure parts: which path a signature line names, what effect
its wording reports, and the verdict from host facts and the call's roots.

The real-kernel counterpart, through the executor on both backends, is
tests/precision/test_denials.py.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.executor._classify import Evidence, classify, is_denied
from stockade.executor._denials import (
    Attribution,
    Effect,
    PathFacts,
    attribute,
    attribute_line,
    changes_directory,
    merges_stderr,
    parse_line,
    refusals,
)
from stockade.executor._evidence import MAX_PATHS, gather, path_facts
from stockade.sandbox.backends.bwrap import BWRAP_DENIAL, BWRAP_RULES
from stockade.sandbox.backends.landlock import LANDLOCK_DENIAL

EROFS, EACCES, EBUSY = "Read-only file system", "Permission denied", "Device or resource busy"


@pytest.mark.parametrize(
    ("line", "signature", "effect", "paths", "shell"),
    [
        ("bash: line 1: /o/g: Read-only file system", EROFS, Effect.WRITE, ("/o/g",), True),
        ("bash: line 12: f: Permission denied", EACCES, Effect.WRITE, ("f",), True),
        ("run.sh: line 3: /o/x: Permission denied", EACCES, Effect.WRITE, ("/o/x",), True),
        (
            "/bin/sh: 1: cannot create /o/x: Permission denied",
            EACCES,
            Effect.WRITE,
            ("/o/x",),
            True,
        ),
        ("bash: line 1: cd: /root: Permission denied", EACCES, Effect.READ, ("/root",), True),
        ("touch: cannot touch '/o/g': Permission denied", EACCES, Effect.WRITE, ("/o/g",), False),
        ('touch: cannot touch "it\'s": Permission denied', EACCES, Effect.WRITE, ("it's",), False),
        (
            "mkdir: cannot create directory \u2018/o/d\u2019: Read-only file system",
            EROFS,
            Effect.WRITE,
            ("/o/d",),
            False,
        ),
        (
            "mkdir: cannot create directory '/o/d': Read-only file system",
            EROFS,
            Effect.WRITE,
            ("/o/d",),
            False,
        ),
        (
            "cp: cannot create regular file '/o/s.sh': Permission denied",
            EACCES,
            Effect.WRITE,
            ("/o/s.sh",),
            False,
        ),
        (
            "sed: couldn't open temporary file /o/sedX1: Permission denied",
            EACCES,
            Effect.WRITE,
            ("/o/sedX1",),
            False,
        ),
        ("rm: cannot remove '/o/f': Read-only file system", EROFS, Effect.ENTRY, ("/o/f",), False),
        (
            "mv: cannot move 'a' to '/o/a': Permission denied",
            EACCES,
            Effect.ENTRY,
            ("a", "/o/a"),
            False,
        ),
        (
            "mv: inter-device move failed: 's' to '/o/s'; unable to remove target: "
            "Read-only file system",
            EROFS,
            Effect.ENTRY,
            ("s", "/o/s"),
            False,
        ),
        (
            "rm: cannot remove '.git': Device or resource busy",
            EBUSY,
            Effect.ENTRY,
            (".git",),
            False,
        ),
        (
            "chmod: changing permissions of '/o/f': Read-only file system",
            EROFS,
            Effect.METADATA,
            ("/o/f",),
            False,
        ),
        (
            "ln: failed to create symbolic link '/o/l': Permission denied",
            EACCES,
            Effect.WRITE,
            ("/o/l",),
            False,
        ),
        (
            "ln: failed to create hard link '/o/h' => 'f': Read-only file system",
            EROFS,
            Effect.WRITE,
            ("/o/h",),
            False,
        ),
        (
            "truncate: cannot open '/o/f' for writing: Permission denied",
            EACCES,
            Effect.WRITE,
            ("/o/f",),
            False,
        ),
        (
            "PermissionError: [Errno 13] Permission denied: '/o/f'",
            EACCES,
            Effect.WRITE,
            ("/o/f",),
            False,
        ),
        (
            "OSError: [Errno 30] Read-only file system: '/o/f'",
            EROFS,
            Effect.WRITE,
            ("/o/f",),
            False,
        ),
        (
            "PermissionError: [Errno 13] Permission denied: 'a' -> '/o/b'",
            EACCES,
            Effect.ENTRY,
            ("a", "/o/b"),
            False,
        ),
        (
            "OSError: [Errno 16] Device or resource busy: '.git'",
            EBUSY,
            Effect.ENTRY,
            (".git",),
            False,
        ),
        (
            "error: could not lock config file .git/config: Permission denied",
            EACCES,
            Effect.WRITE,
            (".git/config",),
            False,
        ),
        ("/o/.git: Read-only file system", EROFS, Effect.WRITE, ("/o/.git",), False),
        ("tee: /o/f: Permission denied", EACCES, Effect.WRITE, ("/o/f",), False),
        ("find: '/root/x': Permission denied", EACCES, Effect.WRITE, ("/root/x",), False),
    ],
)
def test_a_line_names_its_paths_and_effect(line, signature, effect, paths, shell):
    refusal = parse_line(line, signature)
    assert refusal.paths == paths
    assert refusal.effect is effect
    assert refusal.shell is shell


@pytest.mark.parametrize(
    "line",
    [
        "x: Permission denied",  # a bare word, no program: nothing to resolve
        "Permission denied",
        "git@github.com: Permission denied (publickey).",  # text after the signature
        "ssh: connect to host example.org port 22: Permission denied",
        "touch: cannot touch 'it'\\''s': Permission denied",  # shell-escaped quote
        "touch: cannot touch 'a'$'\\n''b': Permission denied",
        "PermissionError: [Errno 13] Permission denied: 'a\\nb'",  # repr escape
        "OSError: [Errno 30] Read-only file system",  # no path at all
        "bash: line 1: printf: write error: Permission denied",
        "echo said: it was Permission denied somewhere",
    ],
)
def test_an_unrecoverable_line_names_no_path(line):
    signature = next(s for s in (EACCES, EROFS) if s in line)
    assert parse_line(line, signature).paths is None


def test_refusals_takes_signature_lines_of_both_streams_only():
    found = refusals(
        LANDLOCK_DENIAL,
        "noise\ntouch: cannot touch '/o/a': Permission denied\r\n",
        "ok\nbash: line 1: /o/b: Permission denied\n",
    )
    assert [(r.paths, r.on_stdout) for r in found] == [(("/o/a",), False), (("/o/b",), True)]
    assert refusals(LANDLOCK_DENIAL, "all good\n", "fine\n") == ()


# --- the verdict ---------------------------------------------------------------

ROOTS = ("/w", "/tmp")
PROTECTED = ("/w/.git/hooks", "/w/.git/config")


def facts(
    target: str,
    *,
    entry: str | None = None,
    exists: bool = True,
    writable: bool = True,
    entry_changeable: bool = True,
    metadata_changeable: bool = True,
    unexecutable: bool = False,
) -> PathFacts:
    return PathFacts(
        target=target,
        entry=entry or target,
        exists=exists,
        writable=writable,
        entry_changeable=entry_changeable,
        metadata_changeable=metadata_changeable,
        unexecutable=unexecutable,
    )


def verdict(line, signature, known, *, roots=ROOTS, protected=PROTECTED, **kwargs):
    return attribute_line(parse_line(line, signature), known, roots, protected, **kwargs)


SANDBOX, ORDINARY, UNKNOWN = Attribution.SANDBOX, Attribution.ORDINARY, Attribution.UNKNOWN


def test_outside_every_root_and_writable_without_the_sandbox_is_a_denial():
    line = "touch: cannot touch '/o/f': Permission denied"
    assert verdict(line, EACCES, {"/o/f": facts("/o/f")}) is SANDBOX


def test_what_the_caller_could_not_do_anyway_is_ordinary():
    # Mode bits of an unprivileged caller, a read-only mount, an immutable file.
    line = "touch: cannot touch '/o/f': Permission denied"
    assert verdict(line, EACCES, {"/o/f": facts("/o/f", writable=False)}) is ORDINARY


def test_inside_a_root_is_ordinary_whatever_the_text():
    line = "bash: line 1: f: Permission denied"
    assert verdict(line, EACCES, {"f": facts("/w/f", writable=False)}) is ORDINARY
    assert verdict(line, EACCES, {"f": facts("/w/f")}) is ORDINARY


def test_read_only_mode_has_no_roots_so_every_writable_path_is_a_denial():
    line = "bash: line 1: f: Read-only file system"
    assert verdict(line, EROFS, {"f": facts("/w/f")}, roots=(), protected=()) is SANDBOX


def test_a_protected_path_inside_a_root_is_a_denial():
    line = "bash: line 1: .git/hooks/x: Read-only file system"
    known = {".git/hooks/x": facts("/w/.git/hooks/x", exists=False)}
    assert verdict(line, EROFS, known) is SANDBOX
    line = "bash: line 1: .git/config: Read-only file system"
    assert verdict(line, EROFS, {".git/config": facts("/w/.git/config")}) is SANDBOX


def test_removing_what_holds_a_protected_path_is_a_denial_but_its_contents_are_free():
    # bwrap pins .git as a mount point: removing or renaming it is refused (EBUSY).
    line = "rm: cannot remove '.git': Device or resource busy"
    assert verdict(line, EBUSY, {".git": facts("/w/.git")}) is SANDBOX
    # A host mount point inside the root is busy without any sandbox.
    line = "rm: cannot remove 'mnt': Device or resource busy"
    assert verdict(line, EBUSY, {"mnt": facts("/w/mnt", entry_changeable=False)}) is ORDINARY
    line = "rm: cannot remove 'other': Device or resource busy"
    assert verdict(line, EBUSY, {"other": facts("/w/other")}) is ORDINARY


def test_an_entry_effect_is_judged_at_its_directory_not_through_a_symlink():
    # Removing a symlink inside the root that points outside changes only the root.
    line = "rm: cannot remove 'link': Permission denied"
    known = {"link": facts("/o/target", entry="/w/link")}
    assert verdict(line, EACCES, known) is ORDINARY
    # Removing the root itself changes its parent, outside.
    line = "rm: cannot remove '/w': Permission denied"
    assert verdict(line, EACCES, {"/w": facts("/w", entry="/w")}) is SANDBOX


def test_a_write_through_a_symlink_is_judged_where_it_lands():
    line = "bash: line 1: pl/new: Permission denied"
    known = {"pl/new": facts("/o/new", entry="/w/pl/new", exists=False)}
    assert verdict(line, EACCES, known) is SANDBOX


def test_a_move_needs_one_forbidden_side_and_both_possible():
    line = "mv: cannot move 'a' to '/o/a': Permission denied"
    both = {"a": facts("/w/a"), "/o/a": facts("/o/a", exists=False)}
    assert verdict(line, EACCES, both) is SANDBOX
    blocked = {"a": facts("/w/a"), "/o/a": facts("/o/a", entry_changeable=False)}
    assert verdict(line, EACCES, blocked) is ORDINARY


def test_metadata_needs_ownership_not_write_access():
    line = "chmod: changing permissions of '/o/f': Read-only file system"
    assert verdict(line, EROFS, {"/o/f": facts("/o/f", writable=False)}) is SANDBOX
    assert verdict(line, EROFS, {"/o/f": facts("/o/f", metadata_changeable=False)}) is ORDINARY


def test_a_failed_exec_is_ordinary_even_where_writes_are_forbidden():
    line = "bash: line 1: ./s.sh: Permission denied"
    known = {"./s.sh": facts("/w/s.sh", unexecutable=True)}
    assert verdict(line, EACCES, known, roots=(), protected=(), exit_code=126) is ORDINARY
    # Without the shell's 126 the same text is a refused redirection into the file.
    assert verdict(line, EACCES, known, roots=(), protected=(), exit_code=1) is SANDBOX


def test_a_read_builtin_is_never_a_denial():
    line = "bash: line 1: cd: /o/d: Permission denied"
    assert verdict(line, EACCES, {"/o/d": facts("/o/d")}) is ORDINARY


def test_a_relative_path_after_a_cd_is_unknown():
    line = "touch: cannot touch 'q': Permission denied"
    assert verdict(line, EACCES, {"q": facts("/w/q")}, moved=True) is UNKNOWN
    assert verdict(line, EACCES, {"q": facts("/w/q")}) is ORDINARY
    absolute = "touch: cannot touch '/o/q': Permission denied"
    assert verdict(absolute, EACCES, {"/o/q": facts("/o/q")}, moved=True) is SANDBOX


def test_a_path_without_facts_is_unknown_and_a_weak_bare_word_must_exist():
    line = "touch: cannot touch '/o/f': Permission denied"
    assert verdict(line, EACCES, {}) is UNKNOWN
    line = "ping: socket: Permission denied"
    assert verdict(line, EACCES, {"socket": facts("/w/socket", exists=False)}) is UNKNOWN
    line = "cat: secret: Permission denied"
    assert verdict(line, EACCES, {"secret": facts("/w/secret", writable=False)}) is ORDINARY


def test_stdout_needs_a_merged_stderr_and_proof_and_unknown_stderr_keeps_the_old_rule():
    proved = parse_line("touch: cannot touch '/o/f': Permission denied", EACCES, on_stdout=True)
    quoted = parse_line("Permission denied", EACCES, on_stdout=True)
    unknown = parse_line("Permission denied", EACCES)
    ordinary = parse_line("touch: cannot touch 'f': Permission denied", EACCES)
    known = {"/o/f": facts("/o/f"), "f": facts("/w/f")}
    assert attribute([proved], known, ROOTS, PROTECTED, merged=True) is True
    assert attribute([proved], known, ROOTS, PROTECTED) is False  # an echo, a log: data
    assert attribute([quoted], known, ROOTS, PROTECTED, merged=True) is False
    assert attribute([unknown], known, ROOTS, PROTECTED) is True
    assert attribute([ordinary], known, ROOTS, PROTECTED) is False
    assert attribute([ordinary, proved], known, ROOTS, PROTECTED, merged=True) is True
    assert attribute([], known, ROOTS, PROTECTED) is False


@pytest.mark.parametrize(
    ("command", "merged"),
    [
        ("make 2>&1 | tail", True),
        ("touch /o/x 2> &1", True),
        ("touch /o/x |& cat", True),
        ("exec 2>&1; touch /o/x", True),
        ("touch /o/x 2>/dev/stdout", True),
        ("touch /o/x", False),
        ("touch /o/x 2>/dev/null", False),
        ("echo hi >&2", False),
        ("cat build.log", False),
    ],
)
def test_merges_stderr(command, merged):
    assert merges_stderr(command) is merged


@pytest.mark.parametrize(
    ("command", "moved"),
    [
        ("cd /o && touch q", True),
        ("(cd sub; make)", True),
        ("pushd /o; touch q", True),
        ("git -C /o init", True),
        ("make -C sub", True),
        ("python -c 'import os; os.chdir(\"/o\")'", True),
        ("touch q", False),
        ("echo abcd > f", False),
        ("grep -c x f", False),
        ("ls --color=auto", False),
    ],
)
def test_changes_directory(command, moved):
    assert changes_directory(command) is moved


def test_classify_with_evidence_still_lets_a_runner_failure_outrank_everything():
    stderr = "bwrap: Can't mount proc\ntouch: cannot touch '/o/f': Read-only file system\n"
    evidence = Evidence(writable=ROOTS, protected=(), paths={"/o/f": facts("/o/f")})
    verdict = classify(BWRAP_RULES, BWRAP_DENIAL, 1, stderr, evidence=evidence)
    assert verdict.runner_failed and not verdict.denied
    ordinary = classify(BWRAP_RULES, BWRAP_DENIAL, 1, stderr.split("\n", 1)[1], evidence=evidence)
    assert ordinary.denied and not ordinary.runner_failed


# --- the facts (the impure helper, on a scratch tree) ----------------------------------


def test_path_facts_resolve_against_the_workdir(scratch):
    root = os.path.realpath(scratch)
    os.mkdir(os.path.join(root, "d"))
    open(os.path.join(root, "f"), "w").close()
    os.symlink("/nonexistent-dir/x", os.path.join(root, "dangling"))
    os.symlink(os.path.join(root, "d"), os.path.join(root, "ld"))

    existing = path_facts("f", root)
    assert existing is not None and existing.exists and existing.target == f"{root}/f"
    assert existing.writable and existing.entry_changeable  # root, a plain directory
    assert existing.unexecutable
    missing = path_facts("d/new", root)
    assert missing is not None and not missing.exists and missing.writable
    through = path_facts("ld/new", root)
    assert through is not None and through.target == f"{root}/d/new"
    link = path_facts("ld", root)
    assert link is not None and link.entry == f"{root}/ld" and link.target == f"{root}/d"
    # A missing directory: the line cannot have come from a refused write there.
    assert path_facts("nope/deeper/x", root) is None
    dangling = path_facts("dangling", root)
    assert dangling is not None and dangling.target == "/nonexistent-dir/x"


def test_gather_is_bounded_and_keyed_as_printed(scratch):
    lines = "".join(f"touch: cannot touch 'f{i}': Permission denied\n" for i in range(300))
    found = refusals(LANDLOCK_DENIAL, lines)
    known = gather(found, scratch)
    assert len(known) == MAX_PATHS and "f0" in known and "f299" not in known


# --- whatever a command prints ------------------------------------------------------

FRAGMENTS = [
    EACCES,
    EROFS,
    EBUSY,
    ": ",
    "'",
    "\u2018",
    "\u2019",
    '"',
    "bash: line 1: ",
    "touch: cannot touch ",
    "PermissionError: [Errno 13] ",
    " -> ",
    " => ",
    "/",
    "..",
    "\x00",
    "\n",
    "\r",
    "\u2028",
]
texts = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=12), max_size=14).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts, texts, st.sampled_from([BWRAP_DENIAL, LANDLOCK_DENIAL]), st.booleans())
def test_attribution_never_raises_and_never_invents_a_denial(stderr, stdout, signatures, merged):
    found = refusals(signatures, stderr, stdout)
    # Facts as the host gives them for whatever the lines name (no path exists here
    # beyond what the text happens to name; NULs and such give no facts at all).
    known = gather(found, "/nonexistent-workdir")
    denied = attribute(found, known, ROOTS, PROTECTED, exit_code=1, merged=merged)
    signature_seen = is_denied(signatures, stderr) or (merged and is_denied(signatures, stdout))
    assert not denied or signature_seen
    # Without a proof, a stdout line never counts.
    assert attribute(refusals(signatures, "", stdout), {}, ROOTS, PROTECTED, merged=merged) is False
