"""The documentation matches the product (issue 38): every `stockade VERB ...` synopsis
names flags that verb's parser has, with its choices; every docs/*.md is linked from
the README; every `src/stockade/...` path named exists; every exception class named
exists, and every `stockade.Name` resolves."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

from stockade.acp.main import parser as acp_parser
from stockade.cli.parser import build_parser
from stockade.modes import allowed_modes, allowed_networks

REPO = Path(__file__).resolve().parent.parent
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", *DOCS]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
COMMAND = re.compile(r"(?:^|[\s/(])stockade ((?:session|cache|rules) [a-z]+|[a-z]+)\b(.*)", re.S)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
# `[--flag a|b|c]` (a synopsis: the whole list) or `--flag a|b` (a subset, in prose).
CHOICES = re.compile(r"(\[?)(--[a-z][a-z-]*)[ =]\[?([a-z-]+(?:\|[a-z-]+)+)")


def _subparsers(parser):
    for action in parser._actions:
        if action.choices and isinstance(action.choices, dict):
            yield from action.choices.items()


def verb_parsers() -> dict[str, object]:
    verbs: dict[str, object] = {}
    for name, sub in _subparsers(build_parser()):
        verbs[name] = sub
        for inner, subsub in _subparsers(sub):
            verbs[f"{name} {inner}"] = subsub
    verbs["acp"] = acp_parser()
    return verbs


def synopses() -> list[tuple[str, str, str]]:
    """(page, verb, the words after it) for each `stockade VERB ...` in a code span or
    a code block line (a block's continuation lines, indented, joined)."""
    found = []
    for page in PAGES:
        text = page.read_text()
        pieces = []
        for block in FENCE.findall(text):
            joined = re.sub(r"\n[ \t]+(?=\[)", " ", block)
            pieces.extend(joined.splitlines())
        pieces.extend(span.replace("\n", " ") for span in SPAN.findall(FENCE.sub("", text)))
        for piece in pieces:
            match = COMMAND.search(piece)
            if match:
                # The command's own words start after ` -- `, or at a quoted one.
                words = re.split(r" -- | '|#", match.group(2), maxsplit=1)[0]
                found.append((page.name, match.group(1), words))
    return found


def choices_of(parser, flag: str) -> set[str] | None:
    if flag == "--network":
        return set(allowed_networks())
    if flag == "--mode":
        return set(allowed_modes())
    for action in parser._actions:
        if flag in action.option_strings:
            return set(action.choices) if action.choices else None
    return None


def test_every_synopsis_flag_exists_on_its_verb_with_its_choices():
    verbs = verb_parsers()
    found = synopses()
    assert len(found) > 40  # the scan sees the synopses at all
    wrong = []
    for page, verb, words in found:
        parser = verbs.get(verb)
        if parser is None:
            continue  # prose: "stockade runs ..."
        flags = {s for action in parser._actions for s in action.option_strings}
        wrong += [
            f"{page}: stockade {verb} {flag}" for flag in FLAG.findall(words) if flag not in flags
        ]
        for bracket, flag, listed in CHOICES.findall(words):
            allowed = choices_of(parser, flag)
            if allowed is None:
                continue
            named = set(listed.split("|"))
            if not named <= allowed or (bracket and named != allowed):
                wrong.append(f"{page}: stockade {verb} {flag} {listed} (parser: {sorted(allowed)})")
    assert wrong == []


def test_every_doc_page_is_linked_from_the_readme():
    readme = (REPO / "README.md").read_text()
    assert [p.name for p in DOCS if f"(docs/{p.name})" not in readme] == []


def test_every_source_path_named_exists():
    missing = []
    for page in PAGES:
        for path in re.findall(r"src/stockade/[\w./-]*[\w/]", page.read_text()):
            if "/_bin/" not in path and not (REPO / path).exists():  # _bin: built at install
                missing.append(f"{page.name}: {path}")
    assert missing == []


def _class_names() -> set[str]:
    names = {name for name in dir(builtins) if name[0].isupper()}
    sources = [*(REPO / "src" / "stockade").rglob("*.py"), REPO / "launcher" / "hatch_build.py"]
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
    return names


ERROR_NAME = re.compile(
    r"`(?:stockade\.(?:[a-z_]+\.)*)?([A-Z][A-Za-z]+(?:Error|Exists|NotFound|Mismatch|Locked|"
    r"Elsewhere|Unavailable|Failed|Lost|Corrupt|Unreadable|NotOpen|TooNew|Policy))\b"
)


def test_every_exception_class_named_exists():
    known = _class_names()
    named = {(page.name, name) for page in PAGES for name in ERROR_NAME.findall(page.read_text())}
    assert len(named) > 10
    assert sorted(f"{page}: {name}" for page, name in named if name not in known) == []


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                target = getattr(target, attribute)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_stockade_dotted_class_name_resolves(page):
    names = set(re.findall(r"`(stockade(?:\.[a-z_]+)*\.[A-Z]\w*)", page.read_text()))
    assert sorted(name for name in names if not _resolves(name)) == []


def test_the_exceptions_a_caller_catches_are_exported_and_documented():
    import stockade

    embedding = (REPO / "docs" / "embedding.md").read_text()
    for name in (
        "ConfigError",
        "InvalidPolicy",
        "SessionMismatch",
        "SessionExists",
        "SessionNotFound",
        "SessionLocked",
        "SessionHeldElsewhere",
        "SandboxUnavailable",
    ):
        assert issubclass(getattr(stockade, name), stockade.StockadeError), name
        assert name in stockade.__all__ and f"| `{name}` |" in embedding, name
    assert "`id`" in embedding and "resume_session(id)" in embedding
