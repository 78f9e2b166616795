"""`history:` of a bash entry (issue 42): on by default, `off`, or a mapping whose
mistakes are refused at load with their key."""

from __future__ import annotations

from stockade.config.builtins import HistorySettings
from stockade.harness.assembly import _history_setup
from stockade.history import HistoryConfig

from .support import errors, load

BASH = "- id: bash\n  name: stockade.bash.{kind}\n  config:\n    history: {value}\n"


def _history(tmp_path, value: str, kind: str = "local") -> HistorySettings:
    composition = load(tmp_path, BASH.format(kind=kind, value=value))
    assert composition.executor is not None
    settings: HistorySettings = composition.executor.config.history
    return settings


def test_on_by_default_and_off_when_asked(tmp_path):
    composition = load(tmp_path, "- id: bash\n  name: stockade.bash.local\n")
    assert composition.executor is not None
    assert composition.executor.config.history == HistorySettings()
    assert HistorySettings().enabled
    assert _history(tmp_path, "off") == HistorySettings(enabled=False)
    assert _history(tmp_path, "on") == HistorySettings()


def test_a_mapping_sets_each_key(tmp_path):
    value = (
        "{record_ignored: true, record_git: true, file_budget: 1024, paths_budget: 500, "
        "rules_budget: 50, bytes_budget: 4096, listed_paths: 5, baseline_wait: 0}"
    )
    assert _history(tmp_path, value) == HistorySettings(
        record_ignored=True,
        record_git=True,
        file_budget=1024,
        paths_budget=500,
        rules_budget=50,
        bytes_budget=4096,
        listed_paths=5,
        baseline_wait=0.0,
    )


class _Logs:
    """A log store whose logs are in a directory (what a harness asks of it here)."""

    def protected_paths(self) -> tuple[str, ...]:
        return ("/var/lib/logs",)


def test_the_paths_budget_reaches_the_history_and_defaults_alike(tmp_path):
    composition = load(tmp_path, BASH.format(kind="local", value="{paths_budget: 500}"))
    assert _history_setup(composition, _Logs()).config.paths_budget == 500
    # One default, said in two rooms (config cannot import the history's).
    assert HistorySettings().paths_budget == HistoryConfig().paths_budget == 200_000
    default = load(tmp_path, "- id: bash\n  name: stockade.bash.local\n")
    assert _history_setup(default, _Logs()).config.paths_budget == 200_000


def test_the_rules_budget_reaches_the_history_and_defaults_alike(tmp_path):
    composition = load(tmp_path, BASH.format(kind="local", value="{rules_budget: 40}"))
    assert _history_setup(composition, _Logs()).config.rules_budget == 40
    assert HistorySettings().rules_budget == HistoryConfig().rules_budget == 500


def test_the_bytes_budget_reaches_the_history_and_defaults_alike(tmp_path):
    composition = load(tmp_path, BASH.format(kind="local", value="{bytes_budget: 4096}"))
    assert _history_setup(composition, _Logs()).config.bytes_budget == 4096
    assert HistorySettings().bytes_budget == HistoryConfig().bytes_budget == 256 << 20


def test_mistakes_are_refused_with_their_key(tmp_path):
    (line,) = errors(tmp_path, BASH.format(kind="local", value="sometimes"))
    assert "history" in line and "on, off or a mapping" in line
    (line,) = errors(tmp_path, BASH.format(kind="local", value="{file_budget: 0}"))
    assert "file_budget" in line
    for wrong in ("0", "-5", "many", "1.5", "true"):
        value = f"{{paths_budget: {wrong}}}"
        (line,) = errors(tmp_path, BASH.format(kind="local", value=value))
        assert "history.paths_budget" in line and "\n" not in line, line
        value = f"{{rules_budget: {wrong}}}"
        (line,) = errors(tmp_path, BASH.format(kind="local", value=value))
        assert "history.rules_budget" in line and "\n" not in line, line
        value = f"{{bytes_budget: {wrong}}}"
        (line,) = errors(tmp_path, BASH.format(kind="local", value=value))
        assert "history.bytes_budget" in line and "\n" not in line, line
    (line,) = errors(tmp_path, BASH.format(kind="local", value="{colour: red}"))
    assert "unknown key 'colour'" in line and "baseline_wait" in line
