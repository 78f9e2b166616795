"""Where a network allowlist command finds the proxy: the bridge's port on its own
loopback, and the variables that point its clients there. Standard library only.
"""

from __future__ import annotations

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


def proxy_environment() -> dict[str, str]:
    """The variables that point a command's clients at the bridge: HTTP(S) through the
    proxy's HTTP face, ALL_PROXY through its SOCKS5 face (names resolved by the proxy);
    NO_PROXY the loopback names alone: the call's own loopback (its network
    namespace's) is where its own test server listens, and a client sending that
    through the proxy would be refused (the plain tier's launcher sets its own)."""
    http = f"http://127.0.0.1:{PROXY_PORT}"
    socks = f"socks5h://127.0.0.1:{PROXY_PORT}"
    values = {"HTTP_PROXY": http, "HTTPS_PROXY": http, "ALL_PROXY": socks}
    return {
        **values,
        **{name.lower(): value for name, value in values.items()},
        "NO_PROXY": LOOPBACK_NAMES,
        "no_proxy": LOOPBACK_NAMES,
    }
