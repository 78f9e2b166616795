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
        directory = parent_of(path)
        while True:
            spec = self.specs.get(directory)
            if spec is not None:
                relative = path[len(directory) + 1 :] if directory else path
                verdict = spec.check_file(relative + "/" if is_dir else relative).include
                if verdict is not None:
                    return verdict
            if not directory:
                return False
            directory = parent_of(directory)

    def with_file(self, directory: str, texts: Iterable[bytes] | None) -> IgnoreRules:
        """These rules with `directory`'s own ignore file(s) replaced by `texts` (None or
        nothing: that directory has none)."""
        if self.record_ignored:
            return self
        spec = parse_gitignore(b"\n".join(texts)) if texts else None
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
