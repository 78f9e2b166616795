"""Pure escalation rules and their model-facing texts: one approved wider retry.

Two kinds of request share the rules: a wider sandbox mode (after a denial), and
network access (`sandbox_permissions: "with_network"`, asked up front: a refused
connection leaves no marker to ground it). Each non-grant outcome has its own text,
and none of them runs anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..network import ACCEPTED, RuleError, parse_entry
from ..vocab import NETWORK_REJECTION_TEXT, WITH_NETWORK, SandboxMode, rejection_text

PAIRED = (
    "sandbox_permissions and justification go together: give both to ask the user for "
    "one wider retry, or neither. Nothing ran."
)
NOT_ADVERTISED = (
    "sandbox_permissions is not available here: this deployment runs commands without a "
    "sandbox, so there is nothing to widen. Nothing ran."
)
NO_SESSION = (
    "escalation needs a session to ask the user in; a direct caller cannot escalate. Nothing ran."
)
NO_APPROVAL_SERVICE = (
    "escalation is not available: this deployment has no approval service to ask the "
    "user through. Nothing ran; do not retry with sandbox_permissions."
)
CANCELLED = "the escalation request was cancelled before the user decided. Nothing ran."


def not_wider(requested: SandboxMode, current: SandboxMode) -> str | None:
    """The refusal text when `requested` does not widen THIS call's mode, else None."""
    if requested.is_wider_than(current):
        return None
    return (
        f'sandbox_permissions "{requested.value}" is not wider than this call\'s current '
        f'mode "{current.value}": nobody was asked and nothing ran. Run the command without '
        "sandbox_permissions."
    )


def rejected(requested: SandboxMode) -> str:
    return (
        f"{rejection_text(requested)}. Nothing ran. Do not ask again for this command in this turn."
    )


def already_rejected(requested: SandboxMode) -> str:
    return (
        f"{rejection_text(requested)} earlier in this turn; it may not be asked again. Nothing ran."
    )


def unavailable(requested: SandboxMode, detail: str | None) -> str:
    why = f" ({detail})" if detail else ""
    return (
        f'escalating to "{requested.value}" is unavailable{why}: the approval policy does '
        "not allow asking, or nobody can answer. Nothing ran; do not retry with "
        "sandbox_permissions."
    )


def granted(requested: SandboxMode) -> str:
    return f'[escalation granted once: this call ran under "{requested.value}"]'


# --- network access (sandbox_permissions "with_network") ----------------------------------

NETWORK_CANCELLED = "the network access request was cancelled before the user decided. Nothing ran."


def network_not_needed(current_mode: SandboxMode) -> str:
    """The refusal when this call already has the network (nobody is asked)."""
    return (
        f'sandbox_permissions "{WITH_NETWORK}" asks for nothing here: this call already '
        f'has network access (mode "{current_mode.value}", network on). Nobody was asked '
        "and nothing ran. Run the command without sandbox_permissions."
    )


def network_rejected() -> str:
    return f"{NETWORK_REJECTION_TEXT}. Nothing ran. Do not ask again for this command in this turn."


def network_already_rejected() -> str:
    return (
        "the user rejected a request for this command earlier in this turn; it may not be "
        "asked again, with network access or otherwise. Nothing ran."
    )


def network_unavailable(detail: str | None) -> str:
    why = f" ({detail})" if detail else ""
    return (
        f"running this command with network access is unavailable{why}: the approval "
        "policy does not allow asking, or nobody can answer. Nothing ran; do not retry "
        f'with sandbox_permissions "{WITH_NETWORK}".'
    )


def network_granted(destinations: Sequence[str] = ()) -> str:
    if destinations:
        return (
            "[network access granted once: this call ran with network allowlist, "
            f"{', '.join(destinations)} added for this call only]"
        )
    return "[network access granted once: this call ran with network on]"


def grant_text(grant: str, destinations: Sequence[str] = ()) -> str:
    """The line a granted call's result ends with: `grant` is a mode or `with_network`
    (with the destinations granted, when it named some)."""
    if grant == WITH_NETWORK:
        return network_granted(destinations)
    return granted(SandboxMode(grant))


# --- per-destination network access (with_network + network_destinations) -----------------

DESTINATION_FORMS = (
    "each one `host:port` or `ip:port` (an IPv6 address in brackets: `[::1]:8080`); "
    "no wildcard, CIDR or port-less entry"
)
DESTINATIONS_WITHOUT_NETWORK = (
    f'network_destinations goes only with sandbox_permissions "{WITH_NETWORK}" (and a '
    "justification). Nobody was asked and nothing ran."
)
NO_DESTINATIONS = (
    "network_destinations is empty: name at least one destination, or leave the field "
    "out. Nobody was asked and nothing ran."
)


def parse_destinations(entries: Sequence[str]) -> tuple[tuple[str, ...], str | None]:
    """The destinations a call asks for, each checked by `parse_entry` and written as
    the rules write it (a host name lower-case and IDNA-encoded), once each, in order:
    (destinations, None), or ((), the refusal text) when one is not `host:port`."""
    if not entries:
        return (), NO_DESTINATIONS
    written: dict[str, None] = {}
    for text in entries:
        try:
            entry = parse_entry(text)
        except RuleError as error:
            return (), _bad_destination(str(error).removesuffix(f"; {ACCEPTED}"))
        single = entry.network is None or entry.network.prefixlen == entry.network.max_prefixlen
        if entry.port is None or entry.kind == "wildcard" or not single:
            return (), _bad_destination(f"{text!r} is not one host and port")
        written[entry.text] = None
    return tuple(written), None


def _bad_destination(why: str) -> str:
    return (
        f"network_destinations: {why}. Give {DESTINATION_FORMS}. Nobody was asked and nothing ran."
    )
