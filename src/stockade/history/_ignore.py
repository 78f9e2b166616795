"""Which paths of a root the history leaves out: any `.git` (the repository's own
history) and, unless configured otherwise, what the root's `.gitignore` files ignore.

Git's rules, read by `pathspec` (its `GitIgnoreSpec` follows git's own edge cases): a
`.gitignore` speaks for the paths below its directory, the deepest one that matches
decides, and nothing inside an ignored directory is looked at. The person's global
excludes file is never read (it is their git configuration, not the workspace's).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import attrs
import pathspec

from ..reprs import fields_repr
from ._model import parent_of
from .config import RULES_TOTAL_FACTOR

GITIGNORE = ".gitignore"
# pathspec's own matcher, whatever else is installed: with google-re2 present its default
# is one RE2 set, which fails to compile past some thousands of rules (and would make
# what the history records depend on the machine).
BACKEND = "simple"
GIT = ".git"


class TooManyRules(Exception):
    """The ignore rules passed their budget (`IgnoreRules.budget`): `why` says how."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def parse_gitignore(
    text: bytes,
    limit: int | None = None,
    where: str = GITIGNORE,
    room: int | None = None,
    total: int | None = None,
) -> pathspec.GitIgnoreSpec | None:
    """The rules of one `.gitignore`'s bytes (a line git could not read is skipped, as
    git skips it); None when it holds none. TooManyRules, before anything is compiled:
    with `limit`, for more rules than that or for one `costly` rule (`where` names the
    file in the reason); with `room`, for more rules than the `total` of all files
    leaves."""
    lines = [
        line
        for line in text.decode("utf-8", "surrogateescape").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    if not lines:
        return None
    if limit is not None and len(lines) > limit:
        raise TooManyRules(
            f"holds more than {limit:,} ignore rules in {where} (history.rules_budget)"
        )
    if room is not None and len(lines) > room:
        raise TooManyRules(
            f"holds more than {total:,} rules in its ignore files ({RULES_TOTAL_FACTOR} "
            "times history.rules_budget)"
        )
    if limit is not None:
        for line in lines:
            if costly(line):
                raise TooManyRules(
                    f"holds an ignore rule in {where} with more wildcards than the history "
                    "matches in bounded time; see docs/undo.md"
                )
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines, backend=BACKEND)
    except (ValueError, TypeError):  # one bad line: keep the good ones, as git does
        good = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line], backend=BACKEND)
            except (ValueError, TypeError):
                continue
            good.append(line)
        return pathspec.GitIgnoreSpec.from_lines(good, backend=BACKEND) if good else None


def costly(line: str) -> bool:
    """Whether matching a path against this rule can take time out of proportion to the
    path: pathspec makes each rule a backtracking regular expression, where every
    wildcard that may match across directories multiplies the work by the path's length
    and every `*` within a name by the name's (measured: `**/a/**/a/**/b` 79 s for one
    4,000-character path; `*a*a*a*a*a*b` 5 s for one 100-character name). Allowed: one
    wildcard across directories (a rule that matches at any depth counts as one; a
    trailing `/**` none) and two `*` runs within names."""
    body = line.rstrip()
    body = body[1:] if body.startswith("!") else body
    body = body.replace("\\*", "")  # an escaped star is a plain character
    if body.endswith("/**"):
        body = body[:-3]
    anywhere = body.startswith("**/") or "/" not in body.rstrip("/")
    body = body.removeprefix("**/")
    across = body.count("/**/") + (1 if anywhere else 0)
    within = len([run for run in body.replace("/**/", "/").split("/") for run in _star_runs(run)])
    return across > 1 or within > 2


def _star_runs(segment: str) -> list[str]:
    """The runs of `*` in one segment of a rule."""
    runs, inside = [], False
    for character in segment:
        if character == "*" and not inside:
            runs.append("*")
        inside = character == "*"
    return runs


@attrs.frozen
class IgnoreRules:
    """The rules in force: one spec per directory holding a `.gitignore` ("" the root).
    A value: `with_file` makes the next.

    `budget`: the most rules one path may be judged by (None: no bound); all the
    directories' together may hold RULES_TOTAL_FACTOR times as many. Past either,
    `ignored` or `with_file` raises TooManyRules: pathspec tries a path against each
    rule in turn, so a command writing long ignore files would make every check of
    every path cost in proportion."""

    __repr__ = fields_repr

    record_ignored: bool = False
    record_git: bool = False
    specs: Mapping[str, pathspec.GitIgnoreSpec] = attrs.field(factory=dict)
    budget: int | None = None
    # Each directory's ignore text's digest as read (an unchanged one is not compiled
    # again; the text itself is not kept: comments cost no rule), its number of rules,
    # and all of theirs.
    digests: Mapping[str, bytes] = attrs.field(factory=dict)
    counts: Mapping[str, int] = attrs.field(factory=dict)
    total: int = 0

    def ignored(self, path: str, is_dir: bool) -> bool:
        """True when `path` is left out (its parent having been looked at)."""
        name = path.rpartition("/")[2]
        if name == GIT and not self.record_git:
            return True
        if self.record_ignored or not self.specs:
            return False
        above = self._above(path)
        if self.budget is not None and sum(self.counts[d] for d in above) > self.budget:
            raise TooManyRules(
                f"has a path judged by more than {self.budget:,} ignore rules "
                "(history.rules_budget)"
            )
        for directory in above:
            relative = path[len(directory) + 1 :] if directory else path
            verdict = self.specs[directory].check_file(relative + "/" if is_dir else relative)
            if verdict.include is not None:
                return verdict.include
        return False

    def _above(self, path: str) -> list[str]:
        """The directories above `path` that hold rules, deepest first: found among the
        rules when they are fewer than its components (a command may nest directories
        thousands deep; a walk up each path would cost its depth squared)."""
        if len(self.specs) < path.count("/") + 1:
            found = [d for d in self.specs if not d or path.startswith(d + "/")]
            return sorted(found, key=len, reverse=True)
        above = []
        directory = path
        while directory:
            directory = parent_of(directory)
            if directory in self.specs:
                above.append(directory)
        return above

    def with_file(self, directory: str, texts: Iterable[bytes] | None) -> IgnoreRules:
        """These rules with `directory`'s own ignore file(s) replaced by `texts` (None or
        nothing: that directory has none)."""
        if self.record_ignored:
            return self
        text = b"\n".join(texts) if texts else b""
        digest = hashlib.sha256(text).digest()
        if self.digests.get(directory) == digest:
            return self  # the same rules: a caller compares them by identity
        room = total_budget = None
        if self.budget is not None:
            # One file's rules judge every path below it (at most the budget), and all
            # files together are bounded too: counted before anything is compiled.
            total_budget = self.budget * RULES_TOTAL_FACTOR
            room = total_budget - (self.total - self.counts.get(directory, 0))
        where = f"{directory}/{GITIGNORE}" if directory else GITIGNORE
        spec = parse_gitignore(text, self.budget, where, room, total_budget) if text else None
        if spec is None and directory not in self.specs:
            return self
        count = len(spec.patterns) if spec is not None else 0
        total = self.total - self.counts.get(directory, 0) + count
        specs, digests, counts = dict(self.specs), dict(self.digests), dict(self.counts)
        if spec is None:
            specs.pop(directory, None)
            digests.pop(directory, None)
            counts.pop(directory, None)
        else:
            specs[directory], digests[directory], counts[directory] = spec, digest, count
        return attrs.evolve(self, specs=specs, digests=digests, counts=counts, total=total)

    def same_for(self, directory: str, other: IgnoreRules) -> bool:
        """True when `directory`'s own rules are the same in both."""
        mine, theirs = self.specs.get(directory), other.specs.get(directory)
        if mine is None or theirs is None:
            return mine is theirs
        return bool(mine == theirs)
