"""A rules file: YAML read like the rest of stockade's configuration, and honoured only when
no confined command could have written it (the trust base).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from ._ruleset import RuleSet

FILE_KEYS = ("rules", "drop", "defaults")


def load_rules_file(path: str, writable_roots: Sequence[str]) -> RuleSet:
    """The rules of the YAML file `path`: a list of rules, or a mapping `{rules: [...],
    drop: [default names], defaults: true|false}`. Refused (ConfigError) when a confined
    command could have written it, or when it is wrong."""
    entries, drop, defaults = read_rules_file(path, writable_roots)
    return RuleSet.from_config(entries, defaults=defaults, drop=drop)


def read_rules_file(path: str, writable_roots: Sequence[str]) -> tuple[list[Any], list[str], bool]:
    """The document of the rules file `path` as (rules, drop, defaults), not yet made
    into rules (a composition adds its own to them); refused as `load_rules_file` says."""
    from ..trust import check_trusted

    problem = check_trusted(path, writable_roots, what="the rules file")
    if problem is not None:
        raise ConfigError(
            problem.message(
                "so its rules are not honoured; move it outside the workspace and the temp "
                "directories, owned by you or root and writable by no one else"
            )
        )
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"the rules file {path} cannot be read: {error}") from None
    document = _load_yaml(text, path)
    try:
        return rules_document(document)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def rules_from_text(text: str, *, source: str = "<rules>") -> RuleSet:
    """The rules of a YAML document (see `load_rules_file`), without the trust check."""
    document = _load_yaml(text, source)
    try:
        entries, drop, defaults = rules_document(document)
        return RuleSet.from_config(entries, defaults=defaults, drop=drop)
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None


def _load_yaml(text: str, source: str) -> Any:
    # ruamel's round-trip loader, as the composition is read: it keeps each rule's line.
    # Not through stockade.config, which will read rules itself (no cycle between rooms).
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return YAML(typ="rt", pure=True).load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        what = " ".join(str(error.problem or "invalid YAML").split())
        raise ConfigError(f"{source}{line}: invalid YAML: {what}") from None
    except (YAMLError, RecursionError, TypeError) as error:
        raise ConfigError(f"{source}: invalid YAML: {' '.join(str(error).split())}") from None


def rules_document(document: Any) -> tuple[list[Any], list[str], bool]:
    """A rules document (a list of rules, or `{rules, drop, defaults}`; None: empty) as
    (rules, drop, defaults), each part's type checked; the rules are made by the caller."""
    if document is None:
        return [], [], True
    if isinstance(document, list):
        return list(document), [], True
    if not isinstance(document, dict):
        raise ConfigError("expected a list of rules or a mapping with 'rules'")
    for key in document:
        if key not in FILE_KEYS:
            raise ConfigError(f"unknown key {key!r} (allowed: {', '.join(FILE_KEYS)})")
    rules = document.get("rules") or []
    drop = document.get("drop") or []
    defaults = document.get("defaults", True)
    if not isinstance(rules, list):
        raise ConfigError(f"'rules' must be a list of rules, got {rules!r}")
    if not isinstance(drop, list) or not all(isinstance(name, str) for name in drop):
        raise ConfigError(f"'drop' must be a list of default rule names, got {drop!r}")
    if not isinstance(defaults, bool):
        raise ConfigError(f"'defaults' must be true or false, got {defaults!r}")
    return list(rules), [str(name) for name in drop], defaults
