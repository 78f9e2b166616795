"""What a root's history records and how: its budgets (a file's size, the paths and the
ignore rules it holds), what it leaves out, what a result lists, and watching."""

from __future__ import annotations

import attrs

from ..reprs import fields_repr

MIB = 1024 * 1024
# About 0.9 KiB of harness memory per tracked path (docs/undo.md, "Measured costs": 46 MiB
# for 50,000 source files, 172 MiB for 200,000 empty ones): 200,000 paths keep one root
# near 180 MiB and a full look near 4 s, and hold a large repository (the Linux kernel
# is about 90,000 paths) twice over.
DEFAULT_PATHS_BUDGET = 200_000
# A path's check against the ignore rules above it costs about 0.7 us a rule (pathspec
# tries each in turn): 500 keep one look at the paths budget's 200,000 paths under about
# 70 s at worst, and hold common ignore files many times over (GitHub's Python template
# holds about 60 rules; the Linux kernel's root .gitignore about 55, its subdirectories'
# a few each).
DEFAULT_RULES_BUDGET = 500
# The rules of all a root's ignore files together, as a multiple of the rules budget:
# compiling one costs about 0.15 ms, so 10,000 about 1.5 s.
RULES_TOTAL_FACTOR = 20
# The most content bytes one boundary reads (and so hashes, compresses and stores): a
# file is read whole, about 300 MB/s for text and 26 MB/s for random bytes here (zlib),
# so 256 MiB bound one boundary near 1 s for source and 10 s at worst, where a command's
# 100 sparse files of 32 MiB each cost 20 s and 3.2 GB read at every rewrite.
DEFAULT_BYTES_BUDGET = 256 * MIB
# A tracker's first look at a root reads up to this multiple of it: it reads only what
# changed while nothing watched (a fresh root: everything), and a command's files were
# met at its call's own boundary under the smaller budget.
FIRST_LOOK_FACTOR = 16


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be 0 or more, not {value}")


def _at_least_one(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be 1 or more, not {value}")


@attrs.frozen
class HistoryConfig:
    """How one root's history is kept.

    `file_budget`: a file larger than this many bytes is not recorded (its changes are
    reported, its content never stored, so never half put back). `paths_budget`: the
    most names one look at the root may list (recorded paths and the ignored names
    beside them; an ignored directory is one name, never entered) and the most paths the
    history may hold; past it the root's history stops (the tracker frees everything and
    refuses every window), so a command that makes millions of files costs the harness
    a bounded look, not millions of entries at every call. Its default keeps one root
    near 180 MiB of memory (about 0.9 KiB a path, measured). `rules_budget`: the most
    ignore rules one path may be judged by (its `.gitignore` files', from the root
    down), and RULES_TOTAL_FACTOR times it in all the
    root's ignore files together; past either the root's history stops too, so a
    command that writes long ignore files (each may hold a MiB of rules) costs the
    harness a bounded look. `bytes_budget`: the most content bytes one boundary reads
    (a call's start or end; FIRST_LOOK_FACTOR times it for a tracker's first look at a
    root): a file past what is left is not recorded, like one over `file_budget`, and
    stays so until it changes; the names of one hard-linked file are read once. The
    store also takes no content that would leave its filesystem less than 256 MiB (or a
    twentieth) free. `record_ignored`:
    record what the root's `.gitignore` files ignore (build output, caches) too.
    `record_git`: record the repository's own `.git` too (off: git keeps its own
    history, and `git status` rewriting its index would count as a change of every
    call). `listed_paths`: how many paths of each kind a result and an event name.
    `watch`: follow changes through the kernel's events (inotify) rather than comparing
    every path at each call; off, or where watching is not sound, every call scans.
    """

    __repr__ = fields_repr

    file_budget: int = attrs.field(default=32 * MIB, validator=_positive)
    paths_budget: int = attrs.field(default=DEFAULT_PATHS_BUDGET, validator=_at_least_one)
    rules_budget: int = attrs.field(default=DEFAULT_RULES_BUDGET, validator=_at_least_one)
    bytes_budget: int = attrs.field(default=DEFAULT_BYTES_BUDGET, validator=_positive)
    record_ignored: bool = False
    record_git: bool = False
    listed_paths: int = attrs.field(default=20, validator=_positive)
    watch: bool = True

    def identity(self) -> str:
        """What decides which paths are recorded and how: a root's remembered state is
        reused only under the same."""
        return f"budget={self.file_budget};ignored={self.record_ignored};git={self.record_git}"
