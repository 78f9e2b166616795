"""The agent's command and its compositions: what each mounts, what the loader refuses,
what the command says without the SDK, and how it is packaged."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import resources

import pytest

from stockade.acp.main import NO_MODEL, choose_model, load, parser
from stockade.acp.model import ChatCompletionsModel, ScriptedModel, UnconfiguredModel
from stockade.config import loads_composition
from stockade.errors import ConfigError
from stockade.vocab import SandboxMode

from .support import REPO


def args(*argv: str):
    return parser().parse_args(argv)


def test_the_editor_composition_mounts_presets_and_the_approval_seam():
    composition = load(args())
    assert composition.presets is not None
    assert composition.approval is not None
    assert composition.confines
    assert composition.executor.config.mode is SandboxMode.WORKSPACE_WRITE
    assert composition.path is None  # package data, like the embedded default


def test_mode_replaces_the_deployment_default():
    composition = load(args("--mode", "read-only"))
    assert composition.executor.config.mode is SandboxMode.READ_ONLY


def test_the_automation_composition_mounts_no_presets_and_needs_an_explicit_mode():
    with pytest.raises(ConfigError, match="needs --mode"):
        load(args("--composition", "automation"))
    composition = load(args("--composition", "automation", "--mode", "workspace-write"))
    assert composition.presets is None
    assert composition.approval is not None
    assert composition.executor.config.mode is SandboxMode.WORKSPACE_WRITE
    with pytest.raises(ConfigError, match="no runtime switch"):
        load(args("--composition", "automation", "--mode", "read-only", "--allow-always"))


def test_presets_without_the_approval_seam_fail_at_load():
    text = resources.files("stockade.acp").joinpath("editor.yml").read_text()
    start = text.index("- id: approval")
    without = text[:start] + text[text.index("- id: permission") :]
    with pytest.raises(ConfigError) as caught:
        loads_composition(without, filename="editor.yml")
    assert "'stockade.permission.presets' needs an approval entry" in str(caught.value)


def test_mode_needs_a_confining_executor(tmp_path):
    config = tmp_path / "stockade.yml"
    config.write_text("- id: bash\n  name: stockade.bash.local\n")
    with pytest.raises(ConfigError, match="confining executor"):
        load(args("--config", str(config), "--mode", "read-only"))


def test_the_model_is_chosen_explicitly(tmp_path):
    none = choose_model(args(), environ={})
    assert isinstance(none, UnconfiguredModel) and none.text == NO_MODEL
    shell = choose_model(args("--model", "shell"), environ={"OPENAI_API_KEY": "k"})
    assert isinstance(shell, ScriptedModel) and shell.description.startswith("shell")
    model = choose_model(args("--model", "m"), environ={"OPENAI_API_KEY": "k"})
    assert isinstance(model, ChatCompletionsModel) and model.model == "m"
    default = choose_model(args(), environ={"STOCKADE_ACP_API_KEY": "k"})
    assert isinstance(default, ChatCompletionsModel) and default.model == "gpt-4o-mini"
    with pytest.raises(ValueError, match="--model m needs an API key: set OPENAI_API_KEY"):
        choose_model(args("--model", "m"), environ={})
    script = tmp_path / "s.json"
    script.write_text('[[{"reply": "hi"}]]')
    chosen = choose_model(args("--script", str(script)), environ={"OPENAI_API_KEY": "k"})
    assert isinstance(chosen, ScriptedModel) and chosen.turns == (({"reply": "hi"},),)


def test_without_the_sdk_the_command_says_so_in_one_line():
    code = (
        "import sys; sys.modules['acp'] = None\n"
        "from stockade.acp.main import main\n"
        "raise SystemExit(main([]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 2
    # The line names the install that works here (this venv holds the clone editable).
    assert done.stderr == (
        f"stockade-acp-agent: the ACP SDK is not installed; install the acp extra: "
        f"{sys.prefix}/bin/pip install -e '{REPO}[acp]'\n"
    )
    assert done.stdout == ""


def test_the_console_script_and_the_extras_are_declared():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["stockade-acp-agent"] == "stockade.acp.main:console"
    sdk = "agent-client-protocol>=0.12.1,<0.13"
    assert project["optional-dependencies"]["acp"] == [sdk]
    # CI installs `.[test,bwrap]`: the ACP tests need the SDK from `test`.
    assert sdk in project["optional-dependencies"]["test"]
    # The agent ships inside the package, so the installed script finds it.
    assert (REPO / "src/stockade/acp/agent.py").is_file()
    assert resources.files("stockade.acp").joinpath("automation.yml").is_file()


def test_show_reads_the_agents_logs(tmp_path, capsys, state_dir_outside):
    import json

    from stockade.acp.main import main

    log = tmp_path / "20260101-000000-00000000.jsonl"
    lines = [
        {"type": "session/header", "seq": 1, "ts": 1.0, "cwd": str(tmp_path)},
        {"type": "acp/prompt", "seq": 2, "ts": 2.0, "text": "hello"},
        {"type": "acp/reply", "seq": 3, "ts": 3.0, "text": "hi"},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["--show", str(log), "--mode", "read-only"]) == 0
    shown = capsys.readouterr().out
    assert "acp/prompt" in shown and "acp/reply" in shown
    assert "read-only" in shown
