"""Request rules (issue 41): the methods and paths a command may ask of a host whose TLS
the proxy terminates, and the decision on the normalised request target. Pure.

A path is judged as the origin will read it, and the origin is sent exactly what was
judged (`RequestVerdict.target`): unreserved characters percent-decoded, `.` and `..`
resolved, `//` collapsed; what origins read in different ways is refused instead.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

import attrs

from ..errors import ConfigError, brief
from ..reprs import fields_repr
from ._ruled import is_token, optional_text, rule_fields, rule_list, ruled_host

_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_HEX = frozenset(string.hexdigits)
# RFC 3986 `pchar` and `/`, raw; `%` starts an escape. `;` is a sub-delim there, but
# refused apart (path parameters), so it is left out.
_PATH_CHARS = _UNRESERVED | frozenset("!$&'()*+,=:@/%")
# Encoded characters that would change the path's shape if an origin decoded them
# before routing: `/`, `\`, NUL, `;`; and `%` itself (a double encoding).
_SHAPE_ESCAPES = {"2F": "an encoded '/'", "5C": "an encoded '\\'", "00": "an encoded NUL"}

REASON_LIMIT = 200


class TargetError(ValueError):
    """A request target that cannot be judged: the message is one line saying why."""


@attrs.frozen
class Target:
    """A request target, normalised: `path` as the origin will be sent it and rules
    judge it; `query` as sent (None when there was no `?`), never judged."""

    __repr__ = fields_repr

    path: str
    query: str | None = None

    def __str__(self) -> str:
        return self.path if self.query is None else f"{self.path}?{self.query}"


def _decoded(path: str) -> str:
    """`path` with each unreserved character's escape decoded and every other escape's
    hex upper-cased; TargetError for a malformed escape or one that changes the shape."""
    out: list[str] = []
    index = 0
    while index < len(path):
        char = path[index]
        if char != "%":
            out.append(char)
            index += 1
            continue
        pair = path[index + 1 : index + 3]
        if len(pair) != 2 or not all(digit in _HEX for digit in pair):
            raise TargetError(
                f"the path holds a malformed escape ({brief(path[index : index + 3])})"
            )
        pair = pair.upper()
        decoded = chr(int(pair, 16))
        if decoded in _UNRESERVED:
            out.append(decoded)
        elif pair in _SHAPE_ESCAPES:
            raise TargetError(
                f"the path holds {_SHAPE_ESCAPES[pair]} (%{pair}), which origins read differently"
            )
        elif pair == "3B":
            raise TargetError("the path holds an encoded ';' (%3B): path parameters are refused")
        elif (
            pair == "25"
            and path[index + 3 : index + 5]
            and all(digit in _HEX for digit in path[index + 3 : index + 5])
        ):
            raise TargetError("the path holds a double encoding (%25 and two hex digits)")
        else:
            out.append(f"%{pair}")
        index += 3
    return "".join(out)


def _resolved(path: str) -> str:
    """`path` (beginning with `/`) with `.` and `..` segments resolved (a `..` at the
    root stays there, as RFC 3986 says) and empty segments (`//`) dropped; a trailing
    `/` is kept."""
    kept: list[str] = []
    segments = path.split("/")[1:]
    trailing = False
    for segment in segments:
        trailing = segment in ("", ".", "..")
        if segment == "..":
            if kept:
                kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    return "/" + "/".join(kept) + ("/" if trailing and kept else "")


def normalise_path(path: str) -> str:
    """An origin-form path as rules judge it and the origin is sent it; TargetError
    when it cannot be judged (characters a URI may not hold, `;` path parameters,
    encoded `/`, `\\`, NUL or `;`, a double encoding)."""
    if not path.startswith("/"):
        raise TargetError(f"the path does not begin with '/' ({brief(path, 60)})")
    bad = next((char for char in path if char not in _PATH_CHARS and char != ";"), None)
    if bad is not None:
        raise TargetError(f"the path holds a character a URI may not hold ({bad!r})")
    if ";" in path:
        # `..;/` is `..` to some servers (Tomcat) and a name to others: refused rather
        # than stripped, so no origin can read a path other than the one judged.
        raise TargetError("the path holds ';': path parameters are refused")
    return _resolved(_decoded(path))


def _authority_host(authority: str) -> str:
    if "@" in authority:
        raise TargetError("the target holds user information ('@' in its authority)")
    if authority.startswith("["):
        host = authority[1:].partition("]")[0]
    else:
        host = authority.rpartition(":")[0] if ":" in authority else authority
    try:
        return ruled_host(host, "the target's authority")
    except ConfigError as error:
        raise TargetError(str(error)) from None


def normalise_target(target: str, host: str | None = None) -> Target:
    """A request target (origin form `/path?query`, absolute form
    `http://host/path?query`, or `*`) normalised; TargetError when it cannot be judged.
    With `host`, an absolute form naming another host is refused."""
    if not target:
        raise TargetError("the target is empty")
    bad = next((char for char in target if not (char.isascii() and char.isprintable())), None)
    if bad is not None or " " in target:
        raise TargetError(f"the target holds a space, control or non-ASCII character ({bad!r})")
    if "#" in target:
        raise TargetError("the target holds a fragment ('#')")
    if target == "*":
        return Target("*")
    scheme, sep, rest = target.partition("://")
    if sep and scheme.lower() in ("http", "https"):
        cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
        asked = _authority_host(rest[:cut])
        if host is not None and asked != _host_of(host):
            raise TargetError(f"the target names {asked}, not {_host_of(host)}")
        target = rest[cut:] or "/"
        if target.startswith("?"):
            target = "/" + target
    path, question, query = target.partition("?")
    return Target(normalise_path(path), query if question else None)


def _host_of(host: str) -> str:
    try:
        return ruled_host(host, "host")
    except ConfigError as error:
        raise TargetError(str(error)) from None


def _glob_pattern(glob: str) -> re.Pattern[str]:
    """`*` matches within one segment, a whole `**` segment any number of segments
    (none too); everything else is itself."""
    parts: list[str] = []
    for segment in glob.split("/")[1:]:
        if segment == "**":
            parts.append("(?:/.*)?")
        else:
            parts.append("/" + "[^/]*".join(re.escape(piece) for piece in segment.split("*")))
    return re.compile("".join(parts) or "/")


def _check_glob(glob: object, where: str) -> str:
    if not isinstance(glob, str) or not glob:
        raise ConfigError(f"{where}: a path is a non-empty string (got {brief(repr(glob))})")
    if "?" in glob or "#" in glob:
        raise ConfigError(f"{where}: a path glob holds no query or fragment ({brief(glob)})")
    try:
        normal = normalise_path(glob)
    except TargetError as error:
        raise ConfigError(f"{where}: the path {brief(glob)}: {error}") from None
    if normal != glob:
        raise ConfigError(f"{where}: write the path {brief(glob)} as {brief(normal)}")
    for segment in glob.split("/"):
        if "**" in segment and segment != "**":
            raise ConfigError(
                f"{where}: `**` is a whole segment (`/a/**`), not part of one ({brief(glob)})"
            )
    return glob


def _methods(value: object, where: str) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError(f"{where}: `methods` is a list of HTTP methods, e.g. [GET, HEAD]")
    methods = list(value)
    if not methods:
        raise ConfigError(f"{where}: `methods` is empty; leave it out to allow every method")
    for method in methods:
        if not isinstance(method, str) or not is_token(method):
            raise ConfigError(f"{where}: {brief(repr(method))} is not an HTTP method")
    return frozenset(method.upper() for method in methods)


def _paths(value: object, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError(f'{where}: `paths` is a list of path globs, e.g. ["/repos/org/**"]')
    paths = tuple(_check_glob(glob, where) for glob in value)
    if not paths:
        raise ConfigError(f"{where}: `paths` is empty; leave it out to allow every path")
    return paths


def _describe(host: str, methods: frozenset[str] | None, paths: tuple[str, ...] | None) -> str:
    said = ",".join(sorted(methods)) if methods is not None else "any method"
    where = " ".join(paths) if paths is not None else "any path"
    return f"{host} {said} {where}"


def _rule_host(value: object) -> str:
    return ruled_host(value, "request rule")


def _rule_methods(value: object) -> frozenset[str] | None:
    return _methods(value, "request rule")


def _rule_paths(value: object) -> tuple[str, ...] | None:
    return _paths(value, "request rule")


@attrs.frozen
class RequestRule:
    """What a command may ask of one host: `methods` (upper-case; None is any) on
    `paths` (globs; None is any). Several rules for a host allow what any one allows.
    `name` names the rule in a verdict and the log (by default its host, methods and
    paths)."""

    __repr__ = fields_repr

    host: str = attrs.field(converter=_rule_host)
    methods: frozenset[str] | None = attrs.field(default=None, converter=_rule_methods)
    paths: tuple[str, ...] | None = attrs.field(default=None, converter=_rule_paths)
    name: str = attrs.field(default="")
    _patterns: tuple[re.Pattern[str], ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.methods is None and self.paths is None:
            raise ConfigError(
                f"request rule for {self.host}: give `methods`, `paths` or both "
                "(a rule with neither restricts nothing)"
            )
        if not self.name:
            object.__setattr__(self, "name", _describe(self.host, self.methods, self.paths))
        patterns = tuple(_glob_pattern(glob) for glob in self.paths or ())
        object.__setattr__(self, "_patterns", patterns)

    def allows_method(self, method: str) -> bool:
        return self.methods is None or method in self.methods

    def allows_path(self, path: str) -> bool:
        if self.paths is None:
            return True
        return any(pattern.fullmatch(path) for pattern in self._patterns)

    def says(self) -> str:
        """What the rule allows, in words for a refusal."""
        said = ", ".join(sorted(self.methods)) if self.methods is not None else "any method"
        where = ", ".join(self.paths) if self.paths is not None else "any path"
        return f"{said} on {where}"


def parse_request_rule(value: object, where: str = "request rule") -> RequestRule:
    """One request rule from a mapping `{host, methods?, paths?, name?}`; ConfigError
    (one line, naming `where`) when it is not valid."""
    fields = rule_fields(value, where, required=("host",), optional=("methods", "paths", "name"))
    host = ruled_host(fields["host"], where)
    methods = _methods(fields.get("methods"), where)
    paths = _paths(fields.get("paths"), where)
    if methods is None and paths is None:
        raise ConfigError(
            f"{where}: give `methods`, `paths` or both (a rule with neither restricts nothing)"
        )
    return RequestRule(host, methods, paths, optional_text(fields, "name", where) or "")


def parse_request_rules(values: object, what: str = "request_rules") -> tuple[RequestRule, ...]:
    """A list of request rules; ConfigError naming the entry that is wrong, or a name
    two rules share."""
    rules = tuple(
        parse_request_rule(value, f"{what}[{index}]")
        for index, value in enumerate(rule_list(values, what))
    )
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        if rule.name in seen:
            raise ConfigError(f"{what}[{index}]: the name {brief(rule.name)} is taken")
        seen.add(rule.name)
    return rules


@attrs.frozen
class RequestVerdict:
    """The decision on one request: `reason` is one line (a refusal's is the 403 body);
    `rule` names the rule that allowed it (None when refused, or when no rule names
    the host); `method` and `target` are what to send the origin, normalised as judged
    (as asked when no rule names the host)."""

    __repr__ = fields_repr

    allowed: bool
    reason: str
    rule: str | None
    method: str
    target: str


def decide_request(
    method: str, target: str, host: str, rules: Iterable[RequestRule]
) -> RequestVerdict:
    """May `method target` go to `host`? A host no rule names is not judged here (the
    destination rules already allowed it). For a ruled host the method is compared
    upper-cased and the path normalised (`normalise_target`); a target that cannot be
    judged is refused."""
    try:
        name = ruled_host(host, "host")
    except ConfigError as error:
        return RequestVerdict(False, f"refused: {error}", None, method, target)
    ruled = [rule for rule in rules if rule.host == name]
    if not ruled:
        return RequestVerdict(True, f"no request rule names {name}", None, method, target)
    if not is_token(method):
        return RequestVerdict(
            False, f"refused: {brief(method, 40)} is not an HTTP method", None, method, target
        )
    asked = method.upper()
    try:
        normal = normalise_target(target, name)
    except TargetError as error:
        reason = f"{asked} {brief(target, REASON_LIMIT)} to {name} is refused: {error}"
        return RequestVerdict(False, reason, None, asked, target)
    shown = f"{asked} {brief(normal.path, REASON_LIMIT)} to {name}"
    for rule in ruled:
        # `*` (OPTIONS *) names no path: only a rule for every path allows it.
        path_allowed = rule.allows_path(normal.path) if normal.path != "*" else rule.paths is None
        if rule.allows_method(asked) and path_allowed:
            reason = f"{shown} is allowed by {rule.name!r}"
            return RequestVerdict(True, reason, rule.name, asked, str(normal))
    allowed = "; or ".join(rule.says() for rule in ruled)
    reason = f"{shown} is refused: {name} allows {allowed}"
    return RequestVerdict(False, reason, None, asked, str(normal))
