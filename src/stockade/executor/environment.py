"""The environment policy: which of the harness's variables a command inherits.

Pure and standard library only (`stockade exec` uses it); hygiene, not confinement:
it applies to every command in every mode, danger-full-access included.
"""

from __future__ import annotations

from types import MappingProxyType

from ..trust import glob_match as glob_match

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Literal

    Inherit = Literal["all", "core", "none"]

# config/builtins.py spells the same choices as a Literal (tests/executor keeps them equal).
INHERIT_CHOICES: tuple[Inherit, ...] = ("all", "core", "none")

# `inherit: core`: what ordinary tools need to find programs, a home, a locale and a
# terminal. Globs, matched case-sensitively (variable names are).
CORE: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "PWD",
    "COLUMNS",
    "LINES",
)

# Stockade's own variables (its configuration, state directory, test DSNs): never
# passed, whatever the policy says; `set` may not name one either.
STOCKADE_OWN = "STOCKADE_*"

# Dropped unless `keep_default_excludes: false`. Case-insensitive globs: the names
# that hold credentials by convention (docs/security.md, "Secrets: the environment").
DEFAULT_EXCLUDES: tuple[str, ...] = (
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*_DSN",
    "*DATABASE_URL*",
    "PG*",
    "AWS_*",
    "AZURE_*",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    STOCKADE_OWN,
)


# A withheld value this long or longer is looked for inside every value too (a
# password inside another variable's URL); a shorter one only as a whole value, so a
# short password drops no PATH that happens to contain it.
CONTAINED_MIN = 8


class Withheld:
    """What no command's environment holds whatever its policy says: the harness's
    own secrets (the session store's DSN and password, the MCP tokens, the variables
    a network credential's value comes from).

    `names`: globs (case-insensitive, as the excludes); `values`: a variable whose
    value is one of them, or holds one of CONTAINED_MIN characters or more, is
    dropped whatever its name. Immutable; `repr` shows the names, never a value."""

    __slots__ = ("_named", "names", "values")

    names: tuple[str, ...]
    _named: _Globs
    values: tuple[str, ...]

    def __init__(self, names: Iterable[str] = (), values: Iterable[str] = ()) -> None:
        object.__setattr__(self, "names", tuple(dict.fromkeys(names)))
        object.__setattr__(self, "values", tuple(dict.fromkeys(v for v in values if v)))
        object.__setattr__(self, "_named", _Globs(self.names, True))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Withheld is immutable (cannot set {name})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Withheld):
            return NotImplemented
        return (self.names, self.values) == (other.names, other.values)

    def __hash__(self) -> int:
        return hash((self.names, self.values))

    def __repr__(self) -> str:
        return f"Withheld(names={self.names!r}, values=<{len(self.values)} withheld>)"

    def __bool__(self) -> bool:
        return bool(self.names or self.values)

    def merged(self, other: Withheld) -> Withheld:
        return Withheld((*self.names, *other.names), (*self.values, *other.values))

    def holds(self, name: str, value: str) -> bool:
        """Whether the variable `name=value` carries one of these secrets."""
        if self._named.match(name):
            return True
        return any(
            value == secret or (len(secret) >= CONTAINED_MIN and secret in value)
            for secret in self.values
        )

    def set_problem(self, policy: EnvPolicy) -> str | None:
        """Why `policy.set` may not stand beside these secrets (a name of them, or a
        value that is one), or None. Names only in the message, never a value."""
        named = sorted(name for name, value in policy.set.items() if self.holds(name, value))
        if not named:
            return None
        return (
            "env.set may not give a command the harness's own secrets (the session "
            "store's credentials, the MCP token, a network credential's variable: "
            'docs/security.md, "Secrets: the environment"): ' + ", ".join(named)
        )


class EnvPolicy:
    """Codex's `shell_environment_policy`, applied in its order (see `apply_policy`).

    The defaults: inherit everything except the default excludes. Immutable and
    hashable (`set` is left out of the hash). A plain class: dataclasses would cost
    `stockade exec` the import of inspect and ast."""

    __slots__ = ("exclude", "include_only", "inherit", "keep_default_excludes", "set")

    inherit: Inherit
    exclude: tuple[str, ...]
    include_only: tuple[str, ...]
    set: Mapping[str, str]
    keep_default_excludes: bool

    def __init__(
        self,
        *,
        inherit: Inherit = "all",
        exclude: tuple[str, ...] = (),
        include_only: tuple[str, ...] = (),
        set: Mapping[str, str] | None = None,
        keep_default_excludes: bool = True,
    ) -> None:
        if inherit not in INHERIT_CHOICES:
            raise ValueError(f"inherit must be one of {', '.join(INHERIT_CHOICES)}")
        given = dict(set or {})
        forbidden = [name for name in given if is_stockade_own(name)]
        if forbidden:
            raise ValueError(
                f"set may not name stockade's own variables ({STOCKADE_OWN}): "
                + ", ".join(sorted(forbidden))
            )
        bad = [name for name in given if not is_variable_name(name)]
        if bad:
            raise ValueError("set names no variable: " + ", ".join(map(repr, sorted(bad))))
        # Frozen all the way down: a caller's dict changed later changes no policy.
        for key, value in (
            ("inherit", inherit),
            ("exclude", tuple(exclude)),
            ("include_only", tuple(include_only)),
            ("set", MappingProxyType(given)),
            ("keep_default_excludes", keep_default_excludes),
        ):
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"EnvPolicy is immutable (cannot set {name})")

    def _key(self) -> tuple[object, ...]:
        return (self.inherit, self.exclude, self.include_only, self.keep_default_excludes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EnvPolicy):
            return NotImplemented
        return self._key() == other._key() and dict(self.set) == dict(other.set)

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        # The names of `set`, never its values.
        return (
            f"EnvPolicy(inherit={self.inherit!r}, exclude={self.exclude!r}, "
            f"include_only={self.include_only!r}, set=<{', '.join(sorted(self.set))}>, "
            f"keep_default_excludes={self.keep_default_excludes!r})"
        )

    def describe(self, withheld: Withheld | None = None) -> dict[str, object]:
        """The policy as plain data (for `stockade probe`): names and globs, no values
        of `set` (it may hold a value the operator meant for the command alone), and of
        `withheld` its names and how many values it holds (never one of them)."""
        return {
            "inherit": self.inherit,
            "keep_default_excludes": self.keep_default_excludes,
            "default_excludes": list(DEFAULT_EXCLUDES) if self.keep_default_excludes else [],
            "always_dropped": [STOCKADE_OWN, *(withheld.names if withheld else ())],
            "withheld_values": len(withheld.values) if withheld else 0,
            "exclude": list(self.exclude),
            "include_only": list(self.include_only),
            "set": sorted(self.set),
        }


def render_policy(policy: EnvPolicy, withheld: Withheld | None = None) -> str:
    """`stockade probe`'s text: what every command inherits of this environment."""
    kept = {"all": "everything", "core": "the core names", "none": "nothing"}[policy.inherit]
    lines = [f"command environment: inherit {policy.inherit} ({kept} of the harness's)"]
    if policy.keep_default_excludes:
        lines.append("  dropped by default: " + " ".join(DEFAULT_EXCLUDES))
    else:
        lines.append(f"  dropped by default: {STOCKADE_OWN} only (keep_default_excludes: false)")
    if withheld:
        held = f"{len(withheld.values)} secret value(s) of the harness's own"
        lines.append(
            "  always dropped, whatever the policy: "
            + " ".join((STOCKADE_OWN, *withheld.names))
            + (f", and any variable holding one of {held}" if withheld.values else "")
        )
    if policy.inherit == "core":
        lines.append("  core: " + " ".join(CORE))
    if policy.exclude:
        lines.append("  exclude: " + " ".join(policy.exclude))
    if policy.set:
        lines.append("  set: " + " ".join(sorted(policy.set)))
    if policy.include_only:
        lines.append("  include_only: " + " ".join(policy.include_only))
    return "\n".join(lines) + "\n"


def matches(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether `name` matches one of `patterns`, case-insensitively (as Codex does)."""
    return _Globs(patterns, True).match(name)


class _Globs:
    """`patterns` sorted by shape once, so a name is judged by a few string methods
    rather than a glob walk per pattern: exact names, `P*` prefixes, `*S` suffixes,
    `*M*` infixes (P, S, M without `*` or `?`), and the rest walked by `glob_match`.
    With `fold`, names and patterns compare upper-cased."""

    __slots__ = ("exact", "fold", "infixes", "other", "prefixes", "suffixes")

    def __init__(self, patterns: tuple[str, ...], fold: bool) -> None:
        exact, prefixes, suffixes, infixes, other = set(), [], [], [], []
        for pattern in patterns:
            if fold:
                pattern = pattern.upper()
            inner = pattern.strip("*")
            if "*" in inner or "?" in inner:
                other.append(pattern)
            elif pattern == inner:
                exact.add(pattern)
            elif not inner:  # all stars: everything
                prefixes.append("")
            elif pattern == inner + "*":
                prefixes.append(inner)
            elif pattern == "*" + inner:
                suffixes.append(inner)
            elif pattern.startswith("*") and pattern.endswith("*"):
                infixes.append(inner)
            else:  # "**x", "x**": stars on one side only, more than one of them
                other.append(pattern)
        self.fold = fold
        self.exact = frozenset(exact)
        self.prefixes = tuple(prefixes)
        self.suffixes = tuple(suffixes)
        self.infixes = tuple(infixes)
        self.other = tuple(other)

    def match(self, name: str) -> bool:
        if self.fold:
            name = name.upper()
        return (
            name in self.exact
            or (bool(self.prefixes) and name.startswith(self.prefixes))
            or (bool(self.suffixes) and name.endswith(self.suffixes))
            or any(infix in name for infix in self.infixes)
            or any(glob_match(name, pattern) for pattern in self.other)
        )


def is_variable_name(name: str) -> bool:
    """Letters, digits and underscores, not starting with a digit (ASCII)."""
    return (
        bool(name)
        and name.isascii()
        and not name[0].isdigit()
        and all(char.isalnum() or char == "_" for char in name)
    )


def is_stockade_own(name: str) -> bool:
    return matches(name, (STOCKADE_OWN,))


def apply_policy(
    environ: Mapping[str, str], policy: EnvPolicy, *, withheld: Withheld | None = None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment a command gets, and the names of `environ` it does not get (sorted).

    The order (Codex's): 1. `inherit` picks the start (all, the CORE names, or none);
    2. the default excludes drop (unless `keep_default_excludes` is false); 3. `exclude`
    drops; 4. `set` adds or overrides; 5. `include_only`, when given, keeps only what
    matches it (the `set` names too). Stockade's own variables (STOCKADE_*) are dropped
    last whatever came before, and `set` cannot name them (EnvPolicy refuses it);
    so are the `withheld` secrets, by name or by value (the harness refuses a `set`
    that names one: `Withheld.set_problem`).
    """
    if policy.inherit == "all":
        out = dict(environ)
    elif policy.inherit == "core":
        # Core names match exactly (case-sensitive): `path` is not PATH.
        core = _Globs(CORE, False)
        out = {k: v for k, v in environ.items() if core.match(k)}
    else:
        out = {}
    if policy.keep_default_excludes:
        excluded = _Globs(DEFAULT_EXCLUDES, True)
        out = {k: v for k, v in out.items() if not excluded.match(k)}
    if policy.exclude:
        exclude = _Globs(policy.exclude, True)
        out = {k: v for k, v in out.items() if not exclude.match(k)}
    out.update(policy.set)
    if policy.include_only:
        include = _Globs(policy.include_only, True)
        out = {k: v for k, v in out.items() if include.match(k)}
    own = _Globs((STOCKADE_OWN,), True)
    out = {k: v for k, v in out.items() if not own.match(k)}
    if withheld:
        out = {k: v for k, v in out.items() if not withheld.holds(k, v)}
    dropped = tuple(sorted(name for name in environ if name not in out))
    return out, dropped
