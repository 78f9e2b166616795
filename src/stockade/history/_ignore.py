"""Which paths of a root the history leaves out: any `.git` (the repository's own
history) and, unless configured otherwise, what the root's `.gitignore` files ignore.

Git's rules, read by `pathspec` (its `GitIgnoreSpec` follows git's own edge cases): a
`.gitignore` speaks for the paths below its directory, the deepest one that matches
decides, and nothing inside an ignored directory is looked at. The person's global
excludes file is never read (it is their git configuration, not the workspace's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs
import pathspec

from ..reprs import fields_repr
from ._model import parent_of

GITIGNORE = ".gitignore"
GIT = ".git"


def parse_gitignore(text: bytes) -> pathspec.GitIgnoreSpec | None:
    """The rules of one `.gitignore`'s bytes (a line git could not read is skipped, as
    git skips it); None when it holds none."""
    lines = [
        line
        for line in text.decode("utf-8", "surrogateescape").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError):  # one bad line: keep the good ones, as git does
        good = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except (ValueError, TypeError):
                continue
            good.append(line)
        return pathspec.GitIgnoreSpec.from_lines(good) if good else None


@attrs.frozen
class IgnoreRules:
    """The rules in force: one spec per directory holding a `.gitignore` ("" the root,
    whose spec also holds `.git/info/exclude`). A value: `with_file` makes the next."""

    __repr__ = fields_repr

    record_ignored: bool = False
    record_git: bool = False
    specs: Mapping[str, pathspec.GitIgnoreSpec] = attrs.field(factory=dict)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """True when `path` is left out (its parent having been looked at)."""
        name = path.rpartition("/")[2]
        if name == GIT and not self.record_git:
            return True
        if self.record_ignored or not self.specs:
            return False
        for directory in self._above(path):
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
        spec = parse_gitignore(b"\n".join(texts)) if texts else None
        if spec is None and directory not in self.specs:
            return self  # the same rules: a caller compares them by identity
        specs = dict(self.specs)
        if spec is None:
            specs.pop(directory, None)
        else:
            specs[directory] = spec
        return attrs.evolve(self, specs=specs)

    def same_for(self, directory: str, other: IgnoreRules) -> bool:
        """True when `directory`'s own rules are the same in both."""
        mine, theirs = self.specs.get(directory), other.specs.get(directory)
        if mine is None or theirs is None:
            return mine is theirs
        return bool(mine == theirs)
