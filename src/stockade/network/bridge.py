"""Where a network allowlist command finds the proxy: the bridge's port on its own
loopback, and the variables that point its clients there. Standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable

# network allowlist: where the command finds the proxy, on its own loopback (the
# bridge's port; nothing else listens in a fresh network namespace).
PROXY_PORT = 3128
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


LOOPBACK_NAMES = "localhost,127.0.0.1,::1"
# A Unix socket's address holds at most this many bytes of path (sun_path, less its NUL).
UNIX_PATH_MAX = 107


def socket_parent(directory: str | None, below: str) -> str:
    """Where to make a directory for a Unix socket: `directory` when given (the caller's
    choice stands), else the temp root ($TMPDIR), or /tmp when the socket's real path
    there, `below` it, would not fit a Unix socket's address (a deep $TMPDIR: the proxy
    could not listen, the bwrap probe could not run). The sandbox sees the socket at
    that path either way."""
    import os
    import tempfile

    if directory is not None:
        return directory
    base = os.path.realpath(tempfile.gettempdir())
    if len(os.fsencode(os.path.join(base, below))) <= UNIX_PATH_MAX:
        return base
    return "/tmp"


def names_loopback(entries: Iterable[str]) -> bool:
    """Whether any allow entry (`network.rules` syntax, checked already) names a
    loopback destination: `localhost`, an address or network in 127/8, or ::1. The
    host's loopback is then the operator's to reach, through the proxy alone."""
    import ipaddress

    for entry in entries:
        host = entry
        if host.startswith("["):
            host = host[1:].partition("]")[0]
        elif host.count(":") == 1:
            host = host.partition(":")[0]
        if host.lower().rstrip(".") == "localhost":
            return True
        try:
            network = ipaddress.ip_network(host, strict=False)
        except ValueError:
            continue
        loop = ipaddress.ip_network("127.0.0.0/8" if network.version == 4 else "::1/128")
        if network.overlaps(loop):
            return True
    return False


def proxy_environment(loopback_direct: bool = True) -> dict[str, str]:
    """The variables that point a command's clients at the bridge: HTTP(S) through the
    proxy's HTTP face, ALL_PROXY through its SOCKS5 face (names resolved by the proxy).
    NO_PROXY names the loopback (`loopback_direct`): the call's own loopback (its
    network namespace's) is where its own test server listens, and a client sending
    that through the proxy would be refused. Emptied when the allow list names a
    loopback destination (`rules.names_loopback`): the host's loopback is then what
    the operator allowed, reached only through the proxy. (The plain tier's launcher
    sets its own.)"""
    http = f"http://127.0.0.1:{PROXY_PORT}"
    socks = f"socks5h://127.0.0.1:{PROXY_PORT}"
    values = {"HTTP_PROXY": http, "HTTPS_PROXY": http, "ALL_PROXY": socks}
    bypass = LOOPBACK_NAMES if loopback_direct else ""
    return {
        **values,
        **{name.lower(): value for name, value in values.items()},
        "NO_PROXY": bypass,
        "no_proxy": bypass,
    }
