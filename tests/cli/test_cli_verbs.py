"""The command line as installed: --version, each verb's help, `run`'s two forms,
`session list`/`prune`/`show` and errors with --json. Through `.venv/bin/stockade`
(the console script a person runs), beside the parser those texts come from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from stockade.cli import fastpath
from stockade.cli.errors import CODES
from stockade.cli.parser import build_parser
from stockade.cli.sessions import parse_duration

from ..support import need, require_backend

VERBS = (
    (),
    ("probe",),
    ("exec",),
    ("run",),
    ("demo",),
    ("mcp",),
    ("session",),
    ("session", "show"),
    ("session", "list"),
    ("session", "prune"),
    ("session", "undo"),
    ("rules",),
    ("rules", "check"),
)
ENV = {"COLUMNS": "80", "STOCKADE_CONFIG": ""}


def installed() -> list[str]:
    script = Path(sys.executable).with_name("stockade")
    if not os.access(script, os.X_OK):
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and there is no installed console script at {script}")
        pytest.skip(f"no installed console script at {script}")
    return [str(script)]


def stockade(*args: str, cwd=None, env=None, stdin=subprocess.DEVNULL):
    return subprocess.run(
        [*installed(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        stdin=stdin,
        env={**os.environ, **ENV, **(env or {})},
    )


def subparser(parser, *names: str):
    """The parser of `stockade NAME...` (argparse keeps subparsers in its actions)."""
    for name in names:
        parser = parser._subparsers._group_actions[0].choices[name]
    return parser


@pytest.fixture
def state_dir():
    """Session logs outside every writable root (the harness refuses others)."""
    path = tempfile.mkdtemp(prefix="stockade-state-", dir="/var/tmp")
    try:
        yield Path(path)
    finally:
        subprocess.run(["rm", "-rf", path], check=False)


# --- --version ---------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_flags_print_the_installed_version(flag):
    from importlib.metadata import version

    done = stockade(flag)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"stockade {version('stockade')}\n",
        "",
    )


def test_python_dash_m_prints_the_version_too():
    done = subprocess.run(
        [sys.executable, "-m", "stockade", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("stockade ")


# --- help, generated usage -----------------------------------------------------------


@pytest.mark.parametrize("names", VERBS, ids=lambda names: " ".join(names) or "stockade")
def test_every_verb_has_a_description_exit_codes_and_examples(names, monkeypatch):
    done = stockade(*names, "--help")
    assert done.returncode == 0, done.stderr
    usage, _, rest = done.stdout.partition("\n\n")
    description = rest.split("\n\n", 1)[0]
    assert description and not description.startswith(("positional", "options")), done.stdout
    assert "\nexit codes:\n  0 " in done.stdout or "\nexit codes:\n  N " in done.stdout
    examples = done.stdout.split("\nexamples:\n", 1)[1]
    assert f"  stockade {' '.join(names)}".rstrip() in examples
    # The usage line is the parser's own, never a hand-written one.
    monkeypatch.setenv("COLUMNS", "80")
    parser = subparser(build_parser(), *names)
    assert parser.usage is None
    assert usage + "\n" == parser.format_usage()


def test_exec_usage_shows_its_options_and_the_command():
    usage = subparser(build_parser(), "exec").format_usage()
    for option in ("--mode", "--network", "--config", "--root", "--backend", "[--] ARGV ..."):
        assert option in usage


# --- run: one string, or -- and words -----------------------------------------------


@pytest.mark.parametrize(
    ("words", "command"),
    [
        (["echo a b"], ["echo a b"]),
        (["--", "echo", "a", "b"], ["echo", "a", "b"]),
        (["echo", "a", "b"], ["echo", "a", "b"]),
        (["--json", "--", "ls", "-l"], ["ls", "-l"]),
        (["true", "--json"], ["true"]),
    ],
)
def test_run_parses_one_string_or_a_command_and_its_words(words, command):
    args = build_parser().parse_args(["run", *words])
    assert args.command == command


def test_run_runs_both_forms_through_the_installed_command(tmp_path):
    require_backend("landlock")
    one = stockade("run", "--backend", "landlock", "echo a  b", cwd=tmp_path)
    assert (one.returncode, one.stdout) == (0, "a b\n"), one.stderr
    words = stockade(
        "run", "--backend", "landlock", "--", "printf", "%s|", "a  b", "$HOME", cwd=tmp_path
    )
    assert (words.returncode, words.stdout) == (0, "a  b|$HOME|"), words.stderr


# --- the fast path reads what the parser reads --------------------------------------

SAME = [
    ["exec", "--", "true"],
    ["exec", "true"],
    ["exec", "ls", "-l", "--mode", "x"],
    ["exec", "--mode", "read-only", "--root", "/r", "--", "touch", "f"],
    ["exec", "--mode=read-only", "--backend=bwrap", "--network", "on", "cmd"],
    ["exec", "--config", "c.yml", "--backend", "landlock", "--", "--mode"],
    ["exec", "--mode", "a", "--mode", "b", "x"],
    ["exec", "-", "x"],
    ["exec"],
    ["exec", "--root", "/r"],
    ["exec", "--", "--", "x"],
    ["run", "echo a b"],
    ["run", "--", "echo", "a", "b"],
    ["run", "--json", "--timeout", "2.5", "--ask", "--", "ls", "-l"],
    ["run", "--timeout=inf", "--mode", "read-only", "true"],
    ["run", "--backend", "bwrap", "x", "y", "z"],
    ["run", "--", "a", "--", "b"],
]
PARSER_DECIDES = [
    ["exec", "--help"],
    ["exec", "--mod", "read-only", "x"],
    ["exec", "--backend", "nope", "x"],
    ["exec", "--root"],
    ["exec", "--root", "-x", "y"],
    ["exec", "--root=", "y"],
    ["exec", "--json", "x"],
    ["run"],
    ["run", "--"],
    ["run", "true", "--json"],
    ["run", "--timeout", "soon", "x"],
    ["run", "--json=1", "x"],
    ["run", "cat", "-"],
    ["probe"],
    ["--version"],
]


@pytest.mark.parametrize("words", SAME, ids=" ".join)
def test_fast_args_equal_the_parsers(words):
    fast = fastpath.fast_args(words)
    assert fast is not None
    assert vars(fast) == vars(build_parser().parse_args(words))


@pytest.mark.parametrize("words", PARSER_DECIDES, ids=" ".join)
def test_anything_unusual_goes_to_the_parser(words):
    assert fastpath.fast_args(words) is None


def test_fast_path_options_are_the_parsers():
    parser = build_parser()
    for verb, table in (("exec", fastpath._EXEC_OPTIONS), ("run", fastpath._RUN_OPTIONS)):
        options = {
            option
            for action in subparser(parser, verb)._actions
            for option in action.option_strings
            if option not in ("-h", "--help")
        }
        assert options == set(table), verb


@pytest.mark.parametrize("argv", [["true"], ["bash", "-c", "true"]], ids=" ".join)
def test_exec_imports_no_argparse_on_the_fast_path(tmp_path, argv):
    """Nor the rules' judge: no rule could meet these (`rules.argv_may_apply`)."""
    probe = (
        "import os, sys\n"
        "def execvp(file, argv, env=None):\n"
        "    print(sorted({'argparse', 'trio', 'msgspec', 'typing', 're', 'dataclasses',"
        " 'attrs', 'stockade.rules._ruleset'} & set(sys.modules)))\n"
        "    sys.exit(0)\n"
        "os.execvp = os.execvpe = execvp\n"
        "from stockade.entry import main\n"
        f"main(['exec', '--mode', 'danger-full-access', '--', *{argv!r}])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_waited_exec_ends_with_its_commands_status_and_leaves_nothing_owed(tmp_path, backend):
    """The console script ends an exec that waited for its command at once, without the
    interpreter's teardown (`cli.ends_as_exec`): nothing it owes is lost on the way. Its
    private temp directory and the placeholders are gone, its own last word (the note
    on the repository the command made, written after the command ended) is out."""
    require_backend(backend)
    need("git")
    script = (
        'echo "$TMPDIR" > tmpdir; touch "$TMPDIR/left"; git init -q .; '
        "printf '#!/bin/sh\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
        "echo out; exit 5"
    )
    done = stockade("exec", "--backend", backend, "--", "sh", "-c", script, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (5, "out\n"), done.stderr
    assert "held what git would run (.git/hooks/pre-commit)" in done.stderr
    private = (tmp_path / "tmpdir").read_text().strip()
    assert private.startswith("/") and not os.path.lexists(private)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", "tmpdir"]


# --- session show: one clear line ----------------------------------------------------


def test_show_says_a_directory_is_not_a_session_log(tmp_path):
    done = stockade("session", "show", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr == (
        f"stockade: {tmp_path} is a directory, not a session log (the logs in it: "
        f"stockade session list --state-dir {tmp_path})\n"
    )
    assert "Errno" not in done.stderr


def test_show_says_a_file_is_not_a_session_log_without_moving_it(tmp_path):
    path = tmp_path / "passwd"
    path.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/bin/sh\n")
    done = stockade("session", "show", str(path))
    assert done.returncode == 1
    assert (
        done.stderr
        == f"stockade: {path} is not a session log: its first line is no stockade event\n"
    )
    assert "move" not in done.stderr


def test_show_errors_as_json(tmp_path):
    cases = {
        str(tmp_path): "NOT_A_SESSION_LOG",
        str(tmp_path / "missing.jsonl"): "SESSION_NOT_FOUND",
        "no such id!": "INVALID_SESSION_ID",
    }
    for target, code in cases.items():
        done = stockade("session", "show", target, "--json", "--state-dir", str(tmp_path))
        assert done.returncode == 1 and done.stderr == ""
        assert json.loads(done.stdout)["error"]["code"] == code


# --- session list and prune ----------------------------------------------------------

HOLD = """
import sys, trio
from stockade import open_harness

async def main(session_id, cwd, mode):
    async with open_harness(None) as harness:
        session = await harness.open_session(session_id, cwd=cwd)
        await session.set_sandbox_mode(mode)
        if sys.argv[4] == "hold":
            print("ready", flush=True)
            await trio.to_thread.run_sync(sys.stdin.read)

trio.run(main, *sys.argv[1:4])
"""


def session(state_dir: Path, session_id: str, cwd: Path, mode: str, *, hold: bool = False):
    """A session written by a harness in a child process; held open with `hold`
    (until the returned process's stdin is closed)."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, session_id, str(cwd), mode, "hold" if hold else "close"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **ENV, "STOCKADE_STATE_DIR": str(state_dir)},
    )
    if hold:
        assert child.stdout.readline() == "ready\n"
    else:
        assert child.wait(timeout=60) == 0
    return child


def test_list_shows_each_session_with_its_effective_values(state_dir, tmp_path):
    session(state_dir, "first", tmp_path, "read-only")
    held = session(state_dir, "second", tmp_path, "workspace-write", hold=True)
    try:
        done = stockade("session", "list", "--json", "--state-dir", str(state_dir))
        text = stockade("session", "list", env={"STOCKADE_STATE_DIR": str(state_dir)})
    finally:
        held.stdin.close()
        held.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["location"] == str(state_dir)
    rows = {row["session"]: row for row in listing["sessions"]}
    assert set(rows) == {"first", "second"}
    assert rows["first"]["sandbox_mode"] == "read-only" and not rows["first"]["open"]
    assert rows["second"]["sandbox_mode"] == "workspace-write" and rows["second"]["open"]
    for row in rows.values():
        assert row["cwd"] == str(tmp_path)
        assert (row["approval_policy"], row["network"]) == ("ask", "off")
        assert row["size"] == (state_dir / f"{row['session']}.jsonl").stat().st_size
        assert row["last_activity"].endswith("Z")
    assert text.returncode == 0
    header, *lines = text.stdout.splitlines()
    assert header.split() == [
        "SESSION",
        "LAST",
        "ACTIVITY",
        "(UTC)",
        "SIZE",
        "MODE",
        "APPROVAL",
        "NETWORK",
        "OPEN",
        "CWD",
    ]
    assert [line.split()[0] for line in lines] == ["first", "second"]


def test_list_of_an_empty_or_missing_directory(state_dir):
    done = stockade("session", "list", "--state-dir", str(state_dir / "none"))
    assert (done.returncode, done.stdout) == (0, f"no sessions in {state_dir / 'none'}\n")


def test_prune_never_removes_an_open_session(state_dir, tmp_path):
    session(state_dir, "idle", tmp_path, "read-only")
    held = session(state_dir, "busy", tmp_path, "read-only", hold=True)
    try:
        dry = stockade(
            "session", "prune", "--older-than", "0s", "--dry-run", "--state-dir", str(state_dir)
        )
        assert dry.returncode == 0, dry.stderr
        assert "would remove idle " in dry.stdout and "kept busy: open" in dry.stdout
        assert (state_dir / "idle.jsonl").exists()

        done = stockade(
            "session", "prune", "--older-than", "0s", "--json", "--state-dir", str(state_dir)
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert [entry["session"] for entry in report["removed"]] == ["idle"]
        assert [entry["session"] for entry in report["kept_open"]] == ["busy"]
        assert not (state_dir / "idle.jsonl").exists()
        assert (state_dir / "busy.jsonl").exists()
    finally:
        held.stdin.close()
        assert held.wait(timeout=60) == 0
    # Closed, it goes too; the session itself could still be written until then.
    done = stockade("session", "prune", "--older-than", "0s", "--state-dir", str(state_dir))
    assert done.stdout.startswith("removed busy (last activity ")
    assert not (state_dir / "busy.jsonl").exists()


def test_prune_keeps_what_is_newer_than_the_cutoff(state_dir, tmp_path):
    session(state_dir, "old", tmp_path, "read-only")
    session(state_dir, "new", tmp_path, "read-only")
    week_ago = time.time() - 8 * 86400
    os.utime(state_dir / "old.jsonl", (week_ago, week_ago))
    done = stockade("session", "prune", "--older-than", "7d", "--state-dir", str(state_dir))
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1].startswith("removed 1 session (")
    assert not (state_dir / "old.jsonl").exists() and (state_dir / "new.jsonl").exists()
    again = stockade("session", "prune", "--older-than", "7d", "--state-dir", str(state_dir))
    assert again.stdout == f"nothing to prune: no session in {state_dir} idle for 7d or more\n"


def test_prune_removes_only_what_starts_with_a_header_the_store_wrote(state_dir, tmp_path):
    """A `*.jsonl` file in the state directory that is not a session log (a user's data,
    an event line that is no header, an empty file) is never removed, and said so."""
    session(state_dir, "real", tmp_path, "read-only")
    others = {
        "notes.jsonl": '{"type":"note","text":"mine"}\n',
        "events.jsonl": '{"type":"sandbox/mode","seq":1,"ts":1.0,"mode":"read-only"}\n',
        "empty.jsonl": "",
        "late.jsonl": '{"type":"session/header","seq":2,"ts":1.0}\n',
    }
    week_ago = time.time() - 8 * 86400
    for name, text in others.items():
        (state_dir / name).write_text(text)
    for path in state_dir.iterdir():
        os.utime(path, (week_ago, week_ago))
    dry = stockade(
        "session", "prune", "--older-than", "7d", "--dry-run", "--state-dir", str(state_dir)
    )
    assert dry.returncode == 0, dry.stderr
    assert "would remove real " in dry.stdout
    done = stockade(
        "session", "prune", "--older-than", "7d", "--json", "--state-dir", str(state_dir)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [entry["session"] for entry in report["removed"]] == ["real"]
    assert sorted(entry["session"] for entry in report["skipped"]) == [
        "empty",
        "events",
        "late",
        "notes",
    ]
    assert all(e["error"]["code"] == "NOT_A_SESSION_LOG" for e in report["skipped"])
    assert not (state_dir / "real.jsonl").exists()
    for name, text in others.items():
        assert (state_dir / name).read_text() == text
    text = stockade("session", "prune", "--older-than", "7d", "--state-dir", str(state_dir))
    assert f"skipped {state_dir / 'notes.jsonl'}: not a stockade session log" in text.stdout
    # Nothing left to remove: said so, not "removed 0 sessions (0 B)" (issue 38, item 5).
    assert text.stdout.splitlines()[-1] == (
        f"nothing was removed from {state_dir}: skipped 4 not a session log"
    )


def test_show_takes_a_unique_prefix_of_an_id(state_dir, tmp_path):
    session(state_dir, "20261201-200703-787e9e94", tmp_path, "read-only")
    session(state_dir, "20261201-200703-99aa0000", tmp_path, "workspace-write")
    env = {"STOCKADE_STATE_DIR": str(state_dir)}
    done = stockade("session", "show", "20261201-200703-78", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["session"] == "20261201-200703-787e9e94"
    both = stockade("session", "show", "20261201-200703", "--json", env=env)
    assert both.returncode == 1
    error = json.loads(both.stdout)["error"]
    assert error["code"] == "AMBIGUOUS_SESSION_ID"
    assert "20261201-200703-787e9e94" in error["detail"] and "99aa0000" in error["detail"]
    none = stockade("session", "show", "2027", env=env)
    assert none.returncode == 1 and "no session log at" in none.stderr


def test_durations():
    assert parse_duration("0s") == 0
    assert parse_duration("12h") == 12 * 3600
    assert parse_duration("1d12h") == 36 * 3600
    assert parse_duration("2w") == 14 * 86400
    assert parse_duration("1.5m") == 90
    for bad in ("", "7", "d", "7x", "-1d", "7d ", "1h-"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_a_store_without_a_catalog_is_a_config_error():
    import argparse
    import io

    from stockade.cli.sessions import run_list, run_prune
    from stockade.sessionlog import MemoryStore

    out = io.StringIO()
    args = argparse.Namespace(json=True, state_dir=None, older_than="1d", dry_run=False)
    assert run_list(args, store=MemoryStore(), stdout=out) == 2
    assert run_prune(args, store=MemoryStore(), stdout=out) == 2
    for line in out.getvalue().splitlines():
        error = json.loads(line)["error"]
        assert error["code"] == "CONFIG" and "cannot list or prune" in error["detail"]


# --- errors with --json --------------------------------------------------------------


def test_errors_with_json_are_one_object_with_a_code(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    cases = [
        (("probe", "--json", "--backend", "nope"), "USAGE", 2),
        (("probe", "--json", "--config", str(tmp_path / "none.yml")), "CONFIG", 2),
        (("session", "list", "--json", "--state-dir", str(not_a_dir)), "ENVIRONMENT", 1),
        (("session", "prune", "--json", "--older-than", "soon"), "USAGE", 2),
        (("session", "prune", "--json"), "USAGE", 2),
        (("session", "show", "--json"), "USAGE", 2),
    ]
    for args, code, status in cases:
        done = stockade(*args, cwd=tmp_path)
        assert done.returncode == status, (args, done.stdout, done.stderr)
        assert done.stderr == "", args
        error = json.loads(done.stdout)["error"]
        assert (error["code"], bool(error["detail"])) == (code, True), args


def test_without_json_the_same_errors_are_one_line_on_stderr(tmp_path):
    done = stockade("session", "prune", "--older-than", "soon", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("stockade: --older-than: ") and done.stderr.count("\n") == 1


def test_every_documented_code_is_in_docs():
    doc = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    for code in CODES:
        assert f"`{code}`" in doc, code


def test_probe_without_a_provider_is_sandbox_unavailable_as_json(state_dir):
    config = state_dir / "stockade.yml"  # outside every writable root, private
    config.write_text("- {id: bash, name: stockade.bash.local}\n")
    config.chmod(0o644)
    done = stockade("probe", "--json", "--config", str(config))
    assert (done.returncode, done.stderr) == (125, "")
    assert json.loads(done.stdout)["error"]["code"] == "SANDBOX_UNAVAILABLE"
    plain = stockade("probe", "--config", str(config))
    assert plain.returncode == 125
    assert plain.stderr.startswith("stockade: SANDBOX_UNAVAILABLE: ")


def test_probe_says_when_a_trust_check_refuses_what_it_would_select():
    """From a directory that holds stockade's own installation, `probe --backend
    landlock` must not headline a backend `run` then refuses (issue 22, item 6)."""
    import stockade as package

    require_backend("landlock")
    holder = os.path.dirname(os.path.dirname(os.path.abspath(package.__file__)))
    # The namespaced tier binds the installation read-only: usable here, and run works.
    namespaced = json.loads(stockade("probe", "--json", "--backend", "landlock", cwd=holder).stdout)
    assert namespaced["selected"] == "landlock" and namespaced["refused_here"] is None
    assert stockade("run", "--backend", "landlock", "true", cwd=holder).returncode == 0
    # The plain tier cannot: probe says so, and run refuses.
    conf = tempfile.mkdtemp(prefix="stockade-plain-conf-", dir="/var/tmp")
    try:
        config = os.path.join(conf, "stockade.yml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(
                "- id: sandbox\n  name: stockade.sandbox.local\n"
                "  config: {backend: landlock, landlock_tier: plain}\n"
                "- id: bash\n  name: stockade.bash.sandbox\n"
            )
        os.chmod(config, 0o600)
        text = stockade("probe", "--config", config, cwd=holder)
        assert text.returncode == 0, text.stderr
        assert "  landlock: usable, but refused here (" in text.stdout
        selected = next(line for line in text.stdout.splitlines() if line.startswith("selected:"))
        assert selected.startswith("selected: landlock, but refused here: stockade's installation")
        report = json.loads(stockade("probe", "--json", "--config", config, cwd=holder).stdout)
        assert report["selected"] == "landlock" and "installation" in report["refused_here"]
        ran = stockade("run", "--config", config, "true", cwd=holder)
        assert ran.returncode == 125 and "SANDBOX_UNAVAILABLE" in ran.stderr
        away = tempfile.mkdtemp(prefix="stockade-plain-away-", dir="/var/tmp")
        elsewhere = json.loads(stockade("probe", "--json", "--config", config, cwd=away).stdout)
        shutil.rmtree(away)
        assert elsewhere["refused_here"] is None, elsewhere
    finally:
        shutil.rmtree(conf, ignore_errors=True)
