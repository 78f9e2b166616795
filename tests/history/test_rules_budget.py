"""The ignore rules' budget (docs/undo.md, "What a command or a model can do to it"):
pathspec tries a path against each rule above it in turn, so a command writing long
`.gitignore` files (each may hold a MiB of rules) made every check of every path cost
in proportion, and each file's rules cost their compiling. Past `rules_budget` rules
judging one path, or twenty times it in all the root's ignore files, the root's
history stops as it does past its paths budget; an unchanged ignore file is not
compiled again."""

from __future__ import annotations

import time

import pathspec
import pytest

from stockade.history import HistoryConfig, OverBudget, Tracker
from stockade.history._ignore import BACKEND, IgnoreRules, TooManyRules, costly

from .support import Session, write

RULES = 30


def _rules(count: int, prefix: str = "r") -> str:
    return "".join(f"{prefix}{i}\n" for i in range(count))


def test_the_budget_is_positive_and_its_default_is_documented():
    assert HistoryConfig().rules_budget == 500
    with pytest.raises(ValueError, match="rules_budget must be 1 or more"):
        HistoryConfig(rules_budget=0)


def test_the_cost_the_budget_bounds_is_real():
    """The control: each rule above a path adds to every check of it (the matcher the
    history uses, whatever else is installed)."""
    few = pathspec.GitIgnoreSpec.from_lines(_rules(10).splitlines(), backend=BACKEND)
    many = pathspec.GitIgnoreSpec.from_lines(_rules(5000).splitlines(), backend=BACKEND)

    def cost(spec: pathspec.GitIgnoreSpec) -> float:
        began = time.perf_counter()
        for i in range(200):
            spec.check_file(f"src/file{i}.txt")
        return time.perf_counter() - began

    assert cost(many) > 20 * cost(few)


def test_a_root_whose_rules_pass_the_budget_never_opens(root, store, method):
    write(f"{root}/.gitignore", _rules(RULES + 1))
    write(f"{root}/a.txt", "a\n")
    config = HistoryConfig(watch=method == "watch", rules_budget=RULES)
    with pytest.raises(OverBudget) as over:
        Tracker.open(root, store, config)
    assert over.value.kind == "rules"
    assert f"more than {RULES} ignore rules in .gitignore (history.rules_budget)" in str(over.value)


def test_rules_in_nested_files_count_together_for_the_paths_below_them(root, open_tracker):
    # Each file alone is within the budget; a path below both is judged by both.
    write(f"{root}/.gitignore", _rules(RULES // 2 + 1, "top"))
    write(f"{root}/sub/.gitignore", _rules(RULES // 2 + 1, "sub"))
    write(f"{root}/sub/a.txt", "a\n")
    with pytest.raises(OverBudget, match=f"a path judged by more than {RULES} ignore rules"):
        open_tracker(rules_budget=RULES)


def test_a_call_that_writes_long_ignore_files_stops_the_history(root, open_tracker):
    write(f"{root}/.gitignore", "build/\n")
    tracker = open_tracker(rules_budget=RULES)
    session = Session(tracker)
    session.call(lambda: write(f"{root}/a.txt", "a\n"))
    started = tracker.before()
    write(f"{root}/.gitignore", _rules(RULES * 40))
    write(f"{root}/b.txt", "b\n")
    with pytest.raises(OverBudget, match=f"more than {RULES} ignore rules in .gitignore") as over:
        tracker.after(started.mark)
    assert over.value.kind == "rules"
    assert tracker.stopped and len(tracker.index) == 0 and tracker.root_fd == -1
    with pytest.raises(OverBudget, match=r"ignore rules in \.gitignore"):
        tracker.before()


def test_many_small_ignore_files_pass_the_total(root, open_tracker):
    # No path is judged by more than the budget, but all together hold 20 times it.
    for part in range(21):
        write(f"{root}/part{part}/.gitignore", _rules(RULES, f"p{part}-"))
    with pytest.raises(OverBudget, match=f"more than {20 * RULES:,} rules in its ignore files"):
        open_tracker(rules_budget=RULES)


def test_rules_within_the_budget_are_kept_and_an_unchanged_file_is_not_compiled_again():
    rules = IgnoreRules(budget=RULES).with_file("", [b"*.log\n", _rules(RULES - 1).encode()])
    assert rules.ignored("x.log", is_dir=False) and not rules.ignored("x.txt", is_dir=False)
    assert rules.total == RULES
    # The same text again: the same rules, by identity (nothing compiled).
    assert rules.with_file("", [b"*.log\n", _rules(RULES - 1).encode()]) is rules
    # Gone: the rules and their count with them.
    emptied = rules.with_file("", None)
    assert emptied.total == 0 and not emptied.specs
    with pytest.raises(TooManyRules):
        rules.with_file("deep", [_rules(RULES + 1).encode()])


def test_rules_are_counted_before_anything_is_compiled(monkeypatch):
    compiled: list[int] = []
    from_lines = pathspec.GitIgnoreSpec.from_lines

    def counting(lines, *args, **kwargs):
        lines = list(lines)
        compiled.append(len(lines))
        return from_lines(lines, *args, **kwargs)

    monkeypatch.setattr(pathspec.GitIgnoreSpec, "from_lines", counting)
    with pytest.raises(TooManyRules, match=f"more than {RULES} ignore rules in .gitignore"):
        IgnoreRules(budget=RULES).with_file("", [_rules(100_000).encode()])
    assert compiled == []


def test_a_rule_whose_matching_could_take_hours_is_refused_before_it_is_compiled():
    """The control: pathspec's matcher backtracks; such a rule takes seconds for one
    path of a few dozen characters. Such rules stop the history; common ones pass."""
    slow = "*a*a*a*a*a*b"
    spec = pathspec.GitIgnoreSpec.from_lines([slow], backend=BACKEND)
    began = time.perf_counter()
    spec.check_file("a" * 60)
    assert time.perf_counter() - began > 0.05
    for rule in (slow, "**/a/**/a/**/b", "**/a/**/b", "a/**/b/**/c", "*a*a*b"):
        assert costly(rule), rule
        with pytest.raises(TooManyRules, match="more wildcards than the history matches"):
            IgnoreRules(budget=RULES).with_file("", [f"*.log\n{rule}\n".encode()])
    for rule in ("*.log", "node_modules/", "**/node_modules/**", "a/**/b", "*a*b", "!keep*.log"):
        assert not costly(rule), rule
        IgnoreRules(budget=RULES).with_file("", [rule.encode()])
    assert not costly("**/*.py[cod]") and not costly("src/**/*.pyc")
