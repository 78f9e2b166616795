"""What every backend's claim is made of, standard library only (the backend modules
state theirs with it, and `stockade exec` imports those): the network effects and the
words for how each is governed, the gap every backend shares, and a runner-failure
rule as a backend states it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from typing import Final

NET_TCP: Final = "tcp connect and bind"
NET_UDP: Final = "udp"
NET_RAW: Final = "raw and packet sockets"
NET_NETLINK: Final = "netlink"
NET_OTHER: Final = "other socket families (vsock, ...)"
NET_ABSTRACT: Final = "abstract unix sockets"
NET_PATHNAME: Final = "pathname unix sockets"

NETWORK_EFFECTS: Final = (
    NET_TCP,
    NET_UDP,
    NET_RAW,
    NET_NETLINK,
    NET_OTHER,
    NET_ABSTRACT,
    NET_PATHNAME,
)
NOT_GOVERNED: Final = "not governed"

# What hiding the host's named sockets when a call starts cannot reach
# (sandbox/_sockets.py): a network namespace does not cover them, and neither
# Landlock (ABI <= 7) nor a seccomp filter can see the path a connect() names. The
# runtime directories the command sees fresh (`Backend.freshens`) hold none at all,
# whenever bound; what the call keeps of them (a root, its temp directory, its
# working directory lying there) is the host's, and so is one that lies in a root.
UNFOUND_SOCKETS_GAP: Final = (
    "pathname unix sockets not found when the call starts (bound later, in another "
    "network or mount namespace, by a relative path, or under another name), outside "
    "the runtime directories the command sees fresh and empty (/run, /var/run, "
    "$XDG_RUNTIME_DIR, /tmp) or in the call's own roots and working directory there"
)


# The kernel's refusal through a read-only mount: a write or a metadata change on the
# read-only host or a protected bind; "Device or resource busy": renaming over or
# removing a mount point (measured, FACTS.md).
MOUNT_DENIAL: Final = ("Read-only file system", "Device or resource busy")

# How a private network namespace governs an effect, and the same with allowlist's one
# way out (bwrap, and the Landlock launcher's namespaced tier).
NETNS: Final = "a private network namespace (its own loopback only)"
ALLOWLIST_TCP: Final = (
    "a private network namespace whose one way out is stockade's bridge on its own "
    "loopback to the proxy, which connects only to the listed destinations"
)
PAIRS_ONLY: Final = "refused: no Unix socket but connected stream or seqpacket pairs"
HIDDEN: Final = (
    "the runtime directories (/run, /var/run, $XDG_RUNTIME_DIR, /tmp) are fresh, empty "
    "and read-only in the command's view (its roots, temp directory, working directory, "
    "proxy and granted agent sockets bound back); elsewhere each one found when the call "
    "starts is covered by an empty read-only file"
)


class Effects:
    """One network claim as a backend states it: how each effect is governed
    (`effects`), and the gaps it leaves (`gaps`)."""

    __slots__ = ("effects", "gaps")

    def __init__(self) -> None:
        self.effects: dict[str, str] = {}
        self.gaps: list[str] = []

    def open_gap(self, effect: str, gap: str) -> None:
        """`effect` is not governed: `gap` says what stays open."""
        self.effects[effect] = f"{NOT_GOVERNED}: {gap}"
        self.gaps.append(gap)

    def pathname(self, unhidden_gap: str, *, refused: bool, hidden: bool) -> None:
        """Named sockets: none but pairs (`refused`), else each one found covered
        (`hidden`), else open (`unhidden_gap`)."""
        if refused:
            self.effects[NET_PATHNAME] = PAIRS_ONLY
        elif hidden:
            self.effects[NET_PATHNAME] = HIDDEN
            self.gaps.append(UNFOUND_SOCKETS_GAP)
        else:
            self.open_gap(NET_PATHNAME, unhidden_gap)

    def claim(self) -> tuple[dict[str, str], tuple[str, ...]]:
        """The claim: every effect, in NETWORK_EFFECTS' order, and the gaps."""
        return {effect: self.effects[effect] for effect in NETWORK_EFFECTS}, tuple(self.gaps)


class FailureRule:
    """A runner-failure rule as a backend module states it: exit_codes (frozenset[int]
    | None: no gate), fatal_signatures (tuple[str, ...]), informational_lines
    (tuple[str, ...]); `messages.RunnerFailureRule` has its meaning. The reply carries
    it as that (converted once per backend: `_profiles.Backend`); a plain class here,
    since msgspec is not imported on exec's fast path."""

    __slots__ = ("exit_codes", "fatal_signatures", "informational_lines")

    def __init__(
        self,
        exit_codes: frozenset[int] | None,
        fatal_signatures: tuple[str, ...],
        informational_lines: tuple[str, ...] = (),
    ) -> None:
        self.exit_codes = exit_codes
        self.fatal_signatures = fatal_signatures
        self.informational_lines = informational_lines

    def __repr__(self) -> str:
        return (
            f"FailureRule({self.exit_codes!r}, {self.fatal_signatures!r}, "
            f"{self.informational_lines!r})"
        )
