"""The bash tool judges an asked call's working directory before the question: every
question carries where the command will start (`ApprovalRequest.workdir`, its real
path and why it is not where the model's text reads), and the start is bound to it.
In process, through the harness (real kernel, default backend), a callback in the
person's place; effects judged on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.approval import CallbackAnswerer
from stockade.trust import workdir_note

pytestmark = pytest.mark.kernel

DELETE = "pwd -P; rm -rf ./*"


def clean(workdir: str = "build", **extra):
    return {
        "command": DELETE,
        "workdir": workdir,
        "sandbox_permissions": "danger-full-access",
        "justification": "clean the build output",
        **extra,
    }


@pytest.fixture
def layout(ws, outside, monkeypatch, tmp_path):
    """ws/ (the root), a victim outside it with a file to keep, and the session logs."""
    state = Path(outside) / "state"
    state.mkdir(mode=0o700)
    monkeypatch.setenv("STOCKADE_STATE_DIR", str(state))
    victim = Path(outside) / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep\n")
    return Path(ws), victim


async def test_every_question_shows_where_a_symlinked_workdir_leads(layout):
    root, victim = layout
    os.symlink(victim, root / "build")
    seen = []

    def person(request):
        seen.append(request)
        return "allowed-once" if request.rule is not None else "rejected"

    async with open_harness(None, answerers=[CallbackAnswerer(person)], cwd=root) as harness:
        session = await harness.open_session(cwd=str(root))
        result = await session.run_tool("bash", clean())
    # The delete-workspace rule's prompt, then the escalation: both name the victim.
    assert [r.rule is not None for r in seen] == [True, False]
    for request in seen:
        where = request.workdir
        assert (where.named, where.spelled, where.real) == ("build", f"{root}/build", str(victim))
        assert where.note == (
            f'the workdir "build" leads through a symlink to {victim}, '
            f"outside the workspace root {root}"
        )
    assert result.is_error and (victim / "precious.txt").exists()


async def test_a_workdir_that_leads_nowhere_is_refused_before_anyone_is_asked(layout):
    root, _ = layout
    seen = []
    async with open_harness(
        None, answerers=[CallbackAnswerer(lambda r: seen.append(r) or True)], cwd=root
    ) as harness:
        session = await harness.open_session(cwd=str(root))
        result = await session.run_tool("bash", clean("missing"))
    assert seen == []
    assert result.is_error and "No such file or directory" in result.text
    assert result.text.endswith("Nothing ran.")


@pytest.mark.parametrize(
    ("swapped_at", "background"), [("escalation", False), ("escalation", True), ("rule", False)]
)
async def test_a_workdir_swapped_while_the_person_reads_is_refused(layout, swapped_at, background):
    root, victim = layout
    (root / "build").mkdir()
    (root / "build" / "obj.o").touch()
    seen = []

    def person(request):
        # What was shown is true now; then the directory is swapped for a symlink.
        seen.append("rule" if request.rule is not None else "escalation")
        assert request.workdir.real == f"{root}/build" and request.workdir.note is None
        if seen[-1] == swapped_at:
            (root / "build").rename(root / "build.old")
            os.symlink(victim, root / "build")
        return "allowed-once"

    async with open_harness(None, answerers=[CallbackAnswerer(person)], cwd=root) as harness:
        session = await harness.open_session(cwd=str(root))
        result = await session.run_tool("bash", clean(background=background))
    # Swapped during the rule's prompt: refused before the escalation is asked at all.
    assert seen == (["rule"] if swapped_at == "rule" else ["rule", "escalation"])
    assert result.is_error
    assert f"it was {root}/build and now leads to {victim}" in result.text
    assert "Nothing ran." in result.text
    assert (victim / "precious.txt").exists() and (root / "build.old" / "obj.o").exists()


async def test_the_directory_that_was_shown_runs_once_approved(layout):
    root, victim = layout
    (root / "build").mkdir()
    (root / "build" / "obj.o").touch()
    async with open_harness(
        None, answerers=[CallbackAnswerer(lambda r: True)], cwd=root
    ) as harness:
        session = await harness.open_session(cwd=str(root))
        result = await session.run_tool("bash", clean())
    assert not result.is_error, result.text
    assert result.text.splitlines()[0] == f"{root}/build"
    assert list((root / "build").iterdir()) == [] and (victim / "precious.txt").exists()


def test_the_note_says_why_a_workdir_is_not_where_it_reads():
    assert workdir_note("build", "/w/build", "/w/build", "/w") is None
    assert workdir_note(None, "/w", "/w", "/w") is None
    assert (
        workdir_note("b", "/w/b", "/w/c", "/w") == 'the workdir "b" leads through a symlink to /w/c'
    )
    assert workdir_note("../x", "/x", "/x", "/w") == (
        'the workdir "../x" is /x, outside the workspace root /w'
    )
    assert workdir_note("b", "/w/b", "/o/v", "/w") == (
        'the workdir "b" leads through a symlink to /o/v, outside the workspace root /w'
    )
    assert workdir_note("/wx", "/wx", "/wx", "/w").endswith("outside the workspace root /w")
