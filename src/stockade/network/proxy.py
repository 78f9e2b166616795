"""The harness's network proxy: one per harness (Trio tasks in a nursery it owns),
one Unix socket per call, each serving that call's rules over HTTP and SOCKS5.

A connection's first byte picks the protocol (0x05 SOCKS5, else HTTP/1.1 by h11).
The proxy resolves names itself, checks every resolved address, connects by IP to
exactly an address it checked, and reports one `Decision` per attempt before any
byte flows (a reporter that fails refuses the connection: the log stays complete).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator

import attrs
import trio

from ..reprs import fields_repr
from ._broker import Broker, OnRequest
from ._call import (
    BUFFER,
    Call,
    Connector,
    OnDecision,
    Resolver,
    ServerContexts,
    connect_tcp,
    resolve,
)
from ._http import serve_http
from ._socks import serve_socks5
from .bridge import socket_parent
from .rules import Rules

SOCKET_NAME = "proxy.sock"
# accept() errors that mean "out of something for now": wait and go on, as
# trio.serve_listeners does.
_ACCEPT_RETRY = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})


@attrs.define(eq=False)
class ConnectionBudget:
    """How many connections one holder (a call, a session, the harness) may have open
    through the proxy at once; a call's budget has its session's as `parent`, and that
    one the harness's. A connection over any of them is refused as it is accepted,
    before anything of it is read: it costs the harness no descriptor for longer.
    `refused` and `refused_by` count those of a call, for its result."""

    __repr__ = fields_repr

    limit: int
    what: str
    parent: ConnectionBudget | None = None
    open: int = 0
    refused: int = 0
    refused_by: str | None = None

    def _chain(self) -> list[ConnectionBudget]:
        chain: list[ConnectionBudget] = []
        budget: ConnectionBudget | None = self
        while budget is not None:
            chain.append(budget)
            budget = budget.parent
        return chain

    def take(self) -> bool:
        """One more open connection for this holder and each one above it: False (and
        the refusal counted) when one of them holds its limit already."""
        chain = self._chain()
        full = next((budget for budget in chain if budget.open >= budget.limit), None)
        if full is not None:
            self.refused += 1
            self.refused_by = f"{full.what} holds {full.limit} open connections, its limit"
            return False
        for budget in chain:
            budget.open += 1
        return True

    def give_back(self) -> None:
        for budget in self._chain():
            budget.open -= 1


@attrs.frozen
class Endpoint:
    """Where one call's proxy listens: a Unix socket at `path` (mode 0666, in a private
    0700 directory), removed when the call's `open_call` block ends."""

    __repr__ = fields_repr

    call_id: str
    path: str


@attrs.define
class NetworkProxy:
    """The proxy of one harness. Open it with `open_proxy`; then each call gets its own
    endpoint and rules: `async with proxy.open_call(call_id, rules) as endpoint:`.

    `resolver(name, port)` returns the addresses to try in order (default: the host's
    getaddrinfo); `connector(address, port)` opens a stream to an IP address (default:
    TCP); `on_decision` (sync or async) receives every `Decision`, before any byte of
    an allowed connection is relayed. `connect_timeout` bounds resolving and
    connecting; `handshake_timeout` bounds reading a request's head or a SOCKS5
    handshake. `directory` is where the private socket directories are made (default:
    the temporary directory). `broker` (issue 41): the ruled hosts, whose TLS the proxy
    terminates and whose every request it judges, reporting each to `on_request`
    before it goes anywhere."""

    __repr__ = fields_repr

    on_decision: OnDecision | None = None
    broker: Broker | None = None
    on_request: OnRequest | None = None
    resolver: Resolver = resolve
    connector: Connector = connect_tcp
    connect_timeout: float = 10.0
    handshake_timeout: float = 30.0
    directory: str | None = None
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False, repr=False)
    # Each ruled host's server context, made once for all calls (a leaf lives a day).
    _contexts: ServerContexts = attrs.field(factory=dict, init=False, repr=False)

    @contextlib.asynccontextmanager
    async def open_call(
        self, call_id: str, rules: Rules, budget: ConnectionBudget | None = None
    ) -> AsyncIterator[Endpoint]:
        """Serve one call on a fresh Unix socket with these rules, at most `budget`'s
        connections at once (None: unbounded); on exit the socket and its directory
        are removed and the call's open connections closed."""
        if self._nursery is None:
            raise RuntimeError("the proxy is not running: use `async with open_proxy(...)`")
        # The random part of mkdtemp's name is 8 characters.
        parent = socket_parent(self.directory, f"stockade-proxy-12345678/{SOCKET_NAME}")
        directory = tempfile.mkdtemp(prefix="stockade-proxy-", dir=parent)
        try:
            path = os.path.join(directory, SOCKET_NAME)
            sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            with sock:
                await sock.bind(path)
                # The 0700 directory keeps other host users out; inside the sandbox the
                # socket is bind-mounted, and a command running as another uid must
                # still be able to connect to it.
                os.chmod(path, 0o666)
                sock.listen(128)
                listener = trio.SocketListener(sock)
                call = Call(
                    call_id,
                    rules,
                    on_decision=self.on_decision,
                    resolver=self.resolver,
                    connector=self.connector,
                    connect_timeout=self.connect_timeout,
                    handshake_timeout=self.handshake_timeout,
                    broker=self.broker,
                    on_request=self.on_request,
                    contexts=self._contexts,
                )
                scope = trio.CancelScope()
                finished = trio.Event()
                self._nursery.start_soon(self._serve, listener, call, budget, scope, finished)
                try:
                    yield Endpoint(call_id=call_id, path=path)
                finally:
                    scope.cancel()
                    with trio.CancelScope(shield=True):
                        await finished.wait()
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    async def _serve(
        self,
        listener: trio.SocketListener,
        call: Call,
        budget: ConnectionBudget | None,
        scope: trio.CancelScope,
        finished: trio.Event,
    ) -> None:
        try:
            with scope:
                async with trio.open_nursery() as connections:
                    while True:
                        try:
                            stream = await listener.accept()
                        except OSError as error:
                            if error.errno not in _ACCEPT_RETRY:
                                # This call's socket is unusable: it stops accepting
                                # (its commands then reach nothing), the proxy goes on.
                                break
                            await trio.sleep(0.1)
                            continue
                        if budget is not None and not budget.take():
                            # Over its share: closed unread (the call's result says so).
                            await trio.aclose_forcefully(stream)
                            continue
                        connections.start_soon(self._handle, stream, call, budget)
        finally:
            finished.set()

    async def _handle(
        self, stream: trio.SocketStream, call: Call, budget: ConnectionBudget | None
    ) -> None:
        # One connection's failure (a broken client, a reporter that raised) ends that
        # connection only: the call and the proxy go on serving.
        try:
            await self._serve_one(stream, call)
        finally:
            if budget is not None:
                budget.give_back()

    async def _serve_one(self, stream: trio.SocketStream, call: Call) -> None:
        async with stream:
            try:
                first = b""
                with trio.move_on_after(self.handshake_timeout):
                    first = await stream.receive_some(BUFFER)
                if not first:
                    return
                if first[0] == 0x05:
                    await serve_socks5(call, stream, first)
                else:
                    await serve_http(call, stream, first)
            except Exception:  # see above: fail this connection closed
                return


@contextlib.asynccontextmanager
async def open_proxy(
    *,
    on_decision: OnDecision | None = None,
    resolver: Resolver = resolve,
    connector: Connector = connect_tcp,
    connect_timeout: float = 10.0,
    handshake_timeout: float = 30.0,
    directory: str | None = None,
    broker: Broker | None = None,
    on_request: OnRequest | None = None,
) -> AsyncIterator[NetworkProxy]:
    """Run a `NetworkProxy` for the block: its calls' tasks live in its own nursery and
    end with it."""
    proxy = NetworkProxy(
        on_decision=on_decision,
        resolver=resolver,
        connector=connector,
        connect_timeout=connect_timeout,
        handshake_timeout=handshake_timeout,
        directory=directory,
        broker=broker,
        on_request=on_request,
    )
    async with trio.open_nursery() as nursery:
        proxy._nursery = nursery
        try:
            yield proxy
        finally:
            proxy._nursery = None
            nursery.cancel_scope.cancel()
