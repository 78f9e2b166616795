"""The history's pure parts: changes composed, manifests kept byte-exact, git's ignore
rules, undo and restore plans over records, the events' fold and bounded summaries."""

from __future__ import annotations

import os

from stockade.history import (
    Change,
    ChangeSummary,
    Entry,
    FilesChanged,
    FilesRestored,
    FilesUndone,
    IgnoreRules,
    Record,
    compose,
    fold_history,
    plan_restore,
    plan_undo,
    tree_digest,
)
from stockade.history._ignore import parse_gitignore
from stockade.history._model import decode_manifest, encode_manifest


def f(content: str, mode: int = 0o644) -> Entry:
    return Entry("file", mode, len(content), digest=content)


DIR = Entry("dir", 0o755)


def test_compose_keeps_first_before_and_last_after_and_drops_round_trips():
    one = {"a": (None, f("1")), "b": (f("x"), f("y"))}
    two = {"a": (f("1"), None), "b": (f("y"), f("z")), "c": (None, f("c"))}
    assert compose(one, two) == {"b": (f("x"), f("z")), "c": (None, f("c"))}


def test_a_manifest_keeps_names_and_targets_byte_exact():
    odd = os.fsdecode(b"caf\xe9/\xff")
    items = {
        odd: (None, Entry("link", 0, 2, target=b"\xfe\xff")),
        "plain": (f("a"), Entry("file", 0o600, 10, unrecorded="over the size budget", stamp="1:2")),
    }
    assert decode_manifest(encode_manifest(items)) == items


def test_a_tree_digest_ignores_order_and_sees_modes():
    a = [("x", f("1")), ("d", DIR)]
    assert tree_digest(a) == tree_digest(reversed(a))
    assert tree_digest(a) != tree_digest([("x", f("1", 0o600)), ("d", DIR)])


def test_ignore_rules_follow_git():
    rules = (
        IgnoreRules().with_file("", [b"*.log\nbuild/\n/top\n"]).with_file("sub", [b"!keep.log\n"])
    )
    assert rules.ignored("a.log", False) and rules.ignored("x/y.log", False)
    assert not rules.ignored("sub/keep.log", False) and rules.ignored("sub/other.log", False)
    assert rules.ignored("build", True) and not rules.ignored("build", False)
    assert rules.ignored("top", False) and not rules.ignored("sub/top", False)
    assert rules.ignored(".git", True) and rules.ignored("sub/.git", False)
    assert not IgnoreRules(record_git=True).ignored(".git", True)
    assert not IgnoreRules(record_ignored=True).with_file("", [b"*\n"]).ignored("a", False)


def test_a_bad_ignore_line_is_skipped_as_git_skips_it():
    spec = parse_gitignore(b"\\\n*.o\n!\n")
    assert spec is not None and spec.match_file("a.o")
    assert parse_gitignore(b"# only a comment\n\n") is None


def _records() -> list[Record]:
    return [
        Record(2, "call", 1, {"a": (None, f("a1")), "b": (f("b0"), f("b1"))}),
        Record(4, "call", 3, {"b": (f("b1"), f("b2")), "c": (None, f("c3"))}),
    ]


def test_an_undo_names_the_later_call_that_touched_its_path():
    current = {"a": f("a1"), "b": f("b2")}
    plan = plan_undo(_records(), 1, current)
    assert plan.blocked and plan.conflicting_calls == [4]
    assert [str(c) for c in plan.conflicts] == ["b: call 3 changed it since"]
    assert plan.targets == {"a": None, "b": f("b0")}


def test_a_later_call_and_its_undo_cancel_out():
    records = [*_records(), Record(5, "undo", 3, {"b": (f("b2"), f("b1")), "c": (f("c3"), None)})]
    plan = plan_undo(records, 1, {"a": f("a1"), "b": f("b1")})
    assert not plan.blocked


def test_an_undo_checks_what_is_there_now():
    plan = plan_undo(_records(), 3, {"b": f("edited by hand"), "c": f("c3")})
    assert [c.path for c in plan.conflicts] == ["b"] and plan.conflicts[0].seq is None


def test_a_state_the_store_lacks_is_not_a_target():
    big = Entry("file", 0o644, 10**9, unrecorded="over the size budget", stamp="s")
    records = [Record(2, "call", 1, {"big": (big, f("small"))})]
    plan = plan_undo(records, 1, {"big": f("small")})
    assert plan.unrecorded == ("big",) and not plan.targets


def test_restore_reverts_everything_after_a_point_but_what_the_call_found():
    records = [
        Record(2, "call", 1, {"a": (None, f("a1"))}),
        Record(3, "outside", 4, {"x": (None, f("person"))}),  # found when call 4 started
        Record(5, "call", 4, {"a": (f("a1"), f("a4")), "d": (None, DIR)}),
        Record(6, "call", 6, {"d/e": (None, f("e"))}),
    ]
    current = {"a": f("a4"), "d": DIR, "d/e": f("e"), "x": f("person")}
    plan = plan_restore(records, 4, current)
    assert not plan.blocked
    assert plan.targets == {"a": f("a1"), "d": None, "d/e": None}
    assert plan_restore(records, 1, current).targets == {
        "a": None,
        "d": None,
        "d/e": None,
        "x": None,
    }
    moved_on = plan_restore(records, 4, {**current, "a": f("typed by hand")})
    assert [c.path for c in moved_on.conflicts] == ["a"]


def test_the_fold_reads_records_from_events():
    summary = ChangeSummary(modified=1, manifest="m")
    events = [
        FilesChanged(seq=2, call=1, change=summary),
        FilesChanged(seq=3, call=4, outside=True, change=summary),
        FilesUndone(seq=7, call=1, change=summary),
        FilesRestored(seq=9, before=4, change=summary),
    ]
    assert [(r.seq, r.kind, r.call, r.manifest) for r in fold_history(events)] == [
        (2, "call", 1, "m"),
        (3, "outside", 4, "m"),
        (7, "undo", 1, "m"),
        (9, "restore", 4, "m"),
    ]


def test_a_summary_counts_everything_and_lists_a_bounded_few():
    items = {f"p{i:02}": (None, f(str(i))) for i in range(30)}
    items["gone"] = (f("g"), None)
    summary = ChangeSummary.of(Change(items, manifest="m"), 5)
    assert (summary.created, summary.deleted, summary.modified) == (30, 1, 0)
    assert summary.created_paths == ("p00", "p01", "p02", "p03", "p04")
    facts = summary.facts()
    assert facts["listed_all"] is False and facts["paths"]["deleted"] == ["gone"]
    assert "not_recorded_why" not in facts  # every new state recorded


def test_a_summary_says_why_files_are_not_recorded_and_how_many_it_did_not_name():
    big = Entry("file", 0o644, 10**9, unrecorded="over the size budget", stamp="s")
    spent = Entry("file", 0o644, 10, unrecorded="past the byte budget of one look (bytes_budget)")
    fifo = Entry("other", 0o644, unrecorded="not a regular file")
    items = {f"s{i}": (None, spent) for i in range(8)} | {"big": (None, big), "p": (None, fifo)}
    facts = ChangeSummary.of(Change(items), 3).facts()
    assert facts["not_recorded"] == ["big", "p", "s0"]
    assert facts["not_recorded_more"] == 7
    assert facts["not_recorded_why"] == [
        "not a regular file",
        "over the size budget",
        "past the byte budget of one look (bytes_budget)",
    ]
