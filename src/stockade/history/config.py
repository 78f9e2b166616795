"""What the history of a root records: the size budget per file, whether ignored paths
and `.git` are recorded, how many paths a result lists, and whether it may watch."""

from __future__ import annotations

import attrs

from ..reprs import fields_repr

MIB = 1024 * 1024


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be 0 or more, not {value}")


@attrs.frozen
class HistoryConfig:
    """How one root's history is kept.

    `file_budget`: a file larger than this many bytes is not recorded (its changes are
    reported, its content never stored, so never half put back). `record_ignored`:
    record what the root's `.gitignore` files ignore (build output, caches) too.
    `record_git`: record the repository's own `.git` too (off: git keeps its own
    history, and `git status` rewriting its index would count as a change of every
    call). `listed_paths`: how many paths of each kind a result and an event name.
    `watch`: follow changes through the kernel's events (inotify) rather than comparing
    every path at each call; off, or where watching is not sound, every call scans.
    """

    __repr__ = fields_repr

    file_budget: int = attrs.field(default=32 * MIB, validator=_positive)
    record_ignored: bool = False
    record_git: bool = False
    listed_paths: int = attrs.field(default=20, validator=_positive)
    watch: bool = True

    def identity(self) -> str:
        """What decides which paths are recorded and how: a root's remembered state is
        reused only under the same."""
        return f"budget={self.file_budget};ignored={self.record_ignored};git={self.record_git}"
