"""Session rendering for every face: a log replayed for a person (`render_text`) or a
script (`summarize`, JSON-ready), with the effective values folded exactly as a session
folds them, over the composition defaults given.

Read-only: it takes no lock and never cuts a torn tail (a live writer may be
mid-append); it reports one instead. A log holds what commands and the model chose
(commands, their output, the names a command asked the proxy for, justifications,
paths): every text of it is shown through `stockade.shown` (escaped, a multi-line one
a row per line), and the JSON form writes the same characters as JSON escapes, so
nothing in a log can act on the terminal that shows it.

A log that cannot be shown raises `Unshowable` (a stable code and a detail for
people); each face tells it its own way (the CLI: `stockade session show`).
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, TextIO

import msgspec

from ..errors import StockadeError
from ..events import EventRegistry, LogCorrupt, SessionEvent, SessionHeader
from ..policy import (
    DEFAULT_PRESETS,
    POLICY_SOURCE,
    PolicyDefaults,
    PresetTable,
    current_preset,
    desired_policy_context,
    effective_approval_policy,
    effective_network,
    effective_sandbox_mode,
    knob_state,
    last_policy_context,
    resolve_workspace_root,
)
from ..sessionlog import (
    BUILTIN_EVENTS,
    CatalogUnreadable,
    Scan,
    SessionStore,
    UnreadableLog,
    check_session_id,
    directory_store,
    names_a_log_file,
    read_log_file,
    session_of_file,
)
from ..shown import json_escaped, one_line, visible
from ..vocab import SandboxMode

_BASE_FIELDS = ("seq", "ts", "source")


class Unshowable(Exception):
    """A session that cannot be shown: a stable `code` (docs/cli.md lists them) and a
    `detail` for people."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def show_session(
    path_or_id: str,
    out: TextIO,
    *,
    as_json: bool = False,
    state_dir: str | None = None,
    registry: EventRegistry = BUILTIN_EVENTS,
    defaults: PolicyDefaults | None = None,
    presets: PresetTable = DEFAULT_PRESETS,
    store: SessionStore | None = None,
) -> None:
    """Write the log named by `path_or_id` to `out`: a table, or with `as_json` one
    JSON object. A log file's path is read as that file; an id (or a unique prefix of
    one) is read from `store` (None: the JSON-lines directory `state_dir`, else
    $STOCKADE_STATE_DIR, else the default). Raises Unshowable."""
    if names_a_log_file(path_or_id):
        session, location = session_of_file(path_or_id), str(Path(path_or_id))
        scan = read_log(path_or_id, registry)
    else:
        if store is None:
            store = directory_store(state_dir, registry)
        session = _store_id(store, path_or_id)
        location = store.location_of(session)
        scan = _scan_from_store(store, session, location)
    summary = summarize(
        scan,
        session,
        location,
        PolicyDefaults() if defaults is None else defaults,
        presets,
    )
    if as_json:
        out.write(json_escaped(msgspec.json.encode(summary).decode()) + "\n")
    else:
        out.write(render_text(scan, summary))


def unique_prefix(prefix: str, ids: list[str], where: str) -> str:
    """The one id of `ids` that starts with `prefix` (`ids` holds no exact match);
    `prefix` itself when none does (the caller reports it not found)."""
    matches = [session_id for session_id in ids if session_id.startswith(prefix)]
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise Unshowable(
            "AMBIGUOUS_SESSION_ID",
            f"{prefix!r} starts {len(matches)} session ids in {where} ({shown}); "
            "give more of the id",
        )
    return matches[0] if matches else prefix


def read_log(path: str, registry: EventRegistry = BUILTIN_EVENTS) -> Scan:
    """The events of the log file at `path`, read without a lock; an Unshowable that says
    in one line what `path` is when it is no readable session log."""
    try:
        return read_log_file(path, registry)
    except UnreadableLog as error:
        raise Unshowable(error.code, error.detail) from None


def _store_id(store: SessionStore, prefix: str) -> str:
    """`prefix` completed to the one session id of `store` it starts (when the store
    holds no session of exactly that id)."""
    try:
        check_session_id(prefix)
        if store.exists(prefix):
            return prefix
        ids = store.session_ids()
    except ValueError as error:  # InvalidSessionId
        raise Unshowable("INVALID_SESSION_ID", str(error)) from None
    except CatalogUnreadable:
        return prefix  # reading the session says what is wrong where it would be
    except StockadeError as error:
        raise Unshowable("STORE_UNAVAILABLE", str(error)) from None
    return unique_prefix(prefix, ids, store.where)


def _scan_from_store(store: SessionStore, session_id: str, location: str) -> Scan:
    try:
        return store.scan(session_id)
    except KeyError:
        raise Unshowable("SESSION_NOT_FOUND", f"no session log at {location}") from None
    except UnreadableLog as error:
        raise Unshowable(error.code, error.detail) from None
    except ValueError as error:  # InvalidSessionId
        raise Unshowable("INVALID_SESSION_ID", str(error)) from None
    except LogCorrupt as error:
        raise Unshowable("LOG_CORRUPT", str(error)) from None
    except StockadeError as error:
        raise Unshowable("STORE_UNAVAILABLE", str(error)) from None


def summarize(
    scan: Scan,
    session: str,
    location: str,
    defaults: PolicyDefaults,
    presets: PresetTable,
) -> dict[str, Any]:
    """The JSON-ready account of a log: its events and the values they fold to.

    `session` is its id, `location` where it is (a file's path, a database's name).
    """
    events = scan.events
    header = events[0] if events and isinstance(events[0], SessionHeader) else None
    session_root = header.cwd if header else None
    state = knob_state(events, defaults)
    told = last_policy_context(events, POLICY_SOURCE)
    # A log holds no temp directory of its own (each open makes one): judged by the last told.
    desired = desired_policy_context(
        events,
        defaults,
        session_root=session_root,
        temp_dir=told.temp_dir if told is not None else None,
        host_temp=told.host_temp if told is not None else (),
    )
    if told is None:
        message = "never told"
    elif told.text == desired.text:
        message = f"current (seq {told.seq})"
    else:
        message = f"stale (seq {told.seq}); the next step appends a new one"
    return {
        "session": session,
        "location": location,
        "parent": header.parent if header else None,
        "torn_tail": None
        if scan.torn is None
        else {"line": scan.torn.line, "bytes": scan.torn.length, "reason": scan.torn.reason},
        "events": [msgspec.to_builtins(event) for event in events],
        "effective": {
            "sandbox_mode": state.sandbox_mode.value,
            "sandbox_mode_from": _origin(events, effective_sandbox_mode, "sandbox/mode"),
            "approval_policy": state.approval_policy.value,
            "approval_policy_from": _origin(events, effective_approval_policy, "approval/policy"),
            "network": state.effective_network.value,
            "network_from": _network_origin(events, state.sandbox_mode),
            "workspace_root": resolve_workspace_root(session_root, defaults),
            "workspace_root_from": "session" if session_root is not None else "fallback",
            "preset": current_preset(events, presets, defaults),
            "policy_message": message,
        },
    }


def _origin(events: tuple[SessionEvent, ...], fold: Any, tag: str) -> str:
    if fold(events) is None:
        return "default"
    last = next(event for event in reversed(events) if event.tag == tag)
    return f"override (seq {last.seq})"


def _network_origin(events: tuple[SessionEvent, ...], mode: SandboxMode) -> str:
    if not mode.confines:
        return f"{mode.value} allows everything"
    return _origin(events, effective_network, "sandbox/network")


def _time(ts: float) -> str:
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class _Shown:
    """Values as a person reads them (every string escaped by `stockade.shown`), and
    how many characters were escaped in all, for the note under the table."""

    def __init__(self) -> None:
        self.escaped = 0

    def text(self, value: str) -> str:
        shown = visible(value)
        self.escaped += shown.escaped
        return "\\n".join(shown.lines)

    def lines(self, value: str) -> tuple[str, ...]:
        shown = visible(value)
        self.escaped += shown.escaped
        return shown.lines

    def value(self, value: Any) -> str:
        """One inline value: a plain word as it is, other strings quoted, lists and
        mappings spelled as Python would, each string in them escaped too."""
        if isinstance(value, str):
            text = self.text(value)
            return text if value and " " not in value else f"'{text}'"
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(self._quoted(item) for item in value) + "]"
        if isinstance(value, dict):
            pairs = (f"{self._quoted(key)}: {self._quoted(item)}" for key, item in value.items())
            return "{" + ", ".join(pairs) + "}"
        return self.text(repr(value))

    def _quoted(self, value: Any) -> str:
        return f"'{self.text(value)}'" if isinstance(value, str) else self.value(value)


# A result's facts as a person first wants them; the rest folded into a count
# (`--json` has them all).
_FOLDED_FACTS = (
    "exit_code",
    "state",
    "denied",
    "timed_out",
    "backend",
    "tier",
    "enforcement",
    "network",
)


def _folded(facts: dict[str, Any], shown: _Shown) -> str:
    kept = [
        f"{name}={shown.value(facts[name])}"
        for name in _FOLDED_FACTS
        if facts.get(name) is not None
    ]
    more = len(facts) - len(kept)
    if more:
        kept.append(f"+{more} more (--json)")
    return "facts{" + " ".join(kept) + "}"


def _fields(event: SessionEvent, shown: _Shown) -> tuple[list[str], list[str]]:
    """`name=value` pairs, and the lines of any long or multi-line text field (a
    result's text as the model saw it; its facts folded, `_folded`)."""
    inline: list[str] = []
    block: list[str] = []
    raw = msgspec.to_builtins(event)
    for name in event.__struct_fields__:
        if name in _BASE_FIELDS or name not in raw:
            continue
        value = raw[name]
        if name == "facts" and isinstance(value, dict):
            inline.append(_folded(value, shown))
        elif isinstance(value, str) and ("\n" in value or len(value) > 60):
            block += [f"{name}:"] + [f"| {line}" for line in shown.lines(value)]
        else:
            inline.append(f"{name}={shown.value(value)}")
    return inline, block


def render_text(scan: Scan, summary: dict[str, Any]) -> str:
    shown = _Shown()
    lines = [
        f"session  {shown.text(summary['session'])}",
        f"log      {shown.text(summary['location'])}",
    ]
    if summary["parent"]:
        lines.append(f"parent   {shown.text(summary['parent'])}")
    lines.append("")
    lines.append(f"{'seq':>5}  {'time (UTC)':<24} {'type':<18} {'source':<22} fields")
    for event in scan.events:
        inline, block = _fields(event, shown)
        lines.append(
            f"{event.seq:>5}  {_time(event.ts):<24} {shown.text(event.tag):<18} "
            f"{shown.text(event.source or '-'):<22} {' '.join(inline)}".rstrip()
        )
        lines += [f"{'':7}{line}" for line in block]
    if scan.torn is not None:
        lines.append(
            f"    ~  line {scan.torn.line}: torn tail of {scan.torn.length} bytes "
            f"({shown.text(scan.torn.reason)}); cut when the session is next opened"
        )
    effective = summary["effective"]
    lines += [
        "",
        "effective",
        f"  sandbox mode     {effective['sandbox_mode']:<20} {effective['sandbox_mode_from']}",
        f"  approval policy  {effective['approval_policy']:<20} "
        f"{effective['approval_policy_from']}",
        f"  network          {effective['network']:<20} {effective['network_from']}",
        f"  workspace root   {shown.text(effective['workspace_root']):<20} "
        f"{effective['workspace_root_from']}",
        f"  preset           {shown.text(effective['preset'])}",
        f"  policy message   {effective['policy_message']}",
    ]
    if shown.escaped:
        many = "character" if shown.escaped == 1 else "characters"
        lines += [
            "",
            f"note: {shown.escaped} control or invisible {many} of this log shown as escapes "
            "(\\r, \\xNN, \\uNNNN); with no such note, every backslash is the log's own",
        ]
    # Every row once more through the same escaping: a field added later and not
    # shown above still cannot reach the terminal raw (escaping is idempotent).
    return "\n".join(one_line(line) for line in lines) + "\n"
