"""Undo (issue 42): what each call changed in its root, recorded in a content-addressed
snapshot store outside every root, and undone per call or restored to any point.

This is the room's public surface. The deciding modules are pure (the model, the ignore
rules, the plans, the events); the tracker, the store, the walk and the apply step do
the disk work, synchronously and without an event loop (a harness calls them from a
worker thread). Names load on first use.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._apply import Applied as Applied
    from ._apply import apply_plan as apply_plan
    from ._ignore import IgnoreRules as IgnoreRules
    from ._model import Change as Change
    from ._model import Entry as Entry
    from ._model import compose as compose
    from ._model import shown as shown
    from ._model import tree_digest as tree_digest
    from ._plan import Conflict as Conflict
    from ._plan import Plan as Plan
    from ._plan import Record as Record
    from ._plan import plan_restore as plan_restore
    from ._plan import plan_undo as plan_undo
    from ._plan import restore_scope as restore_scope
    from ._plan import undo_scope as undo_scope
    from ._store import SnapshotStore as SnapshotStore
    from ._store import StoreError as StoreError
    from ._tracker import HistoryError as HistoryError
    from ._tracker import Mark as Mark
    from ._tracker import OverBudget as OverBudget
    from ._tracker import Started as Started
    from ._tracker import Tracker as Tracker
    from .config import HistoryConfig as HistoryConfig
    from .events import HISTORY_EVENTS as HISTORY_EVENTS
    from .events import ChangeSummary as ChangeSummary
    from .events import FilesChanged as FilesChanged
    from .events import FilesRestored as FilesRestored
    from .events import FilesUndone as FilesUndone
    from .events import HistoryStopped as HistoryStopped
    from .events import RecordRef as RecordRef
    from .events import UndoOutcome as UndoOutcome
    from .events import fold_history as fold_history

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())
