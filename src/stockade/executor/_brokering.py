"""The executor's side of issue 41: the harness's broker for ruled hosts, made once when
the executor starts, the CA bundle its commands trust, and what both add to a command's environment.

The real credential values stay in the broker (this process's memory) and the CA's key
is never written; the bundle is a 0644 file in a 0755 directory the composition plan
named (`network.trust_directory`), which every confined call keeps read-only and in sight.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..errors import ConfigError
from .config import ExecutorConfig
from .environment import Withheld

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..network import Broker


@attrs.define(eq=False, repr=False)
class Brokered:
    """A running harness's broker and the bundle its commands trust, in `directory`
    (removed by `close`). `withheld`: the credentials' variables and values, which no
    command's environment holds whatever its policy says."""

    broker: Broker
    directory: str
    bundle: str
    withheld: Withheld = attrs.field(repr=False)

    def environment(self) -> dict[str, str]:
        """What every command's environment gets over what its policy left: each
        credential's placeholder, and the trust variables naming the bundle."""
        from ..network import trust_environment

        return {**trust_environment(self.bundle), **self.broker.placeholders}

    def close(self) -> None:
        from ..network import remove_trust_directory

        remove_trust_directory(self.directory)


def open_broker(config: ExecutorConfig, environ: Mapping[str, str]) -> Brokered | None:
    """The broker for `config`'s credential and request rules (None: no rule names a
    host), each credential's value read from `environ` (the harness's), and its bundle
    written to a new directory at `config.network_trust_directory` (one of its own in
    the temporary directory when none is named). ConfigError (one line, never a
    value): a missing or unusable credential, a CA bundle that cannot be read or
    written, an `env.set` handing a command a credential."""
    if not config.has_ruled_hosts:
        return None
    from ..network import make_broker, make_trust_directory, trust_directory

    broker = make_broker(
        config.network_credentials,
        config.network_requests,
        environ,
        upstream_ca=config.network_upstream_ca,
    )
    if broker is None:
        return None
    withheld = Withheld(
        sorted(broker.withheld), (credential.value.reveal() for credential in broker.credentials)
    )
    problem = withheld.set_problem(config.env)
    if problem is not None:
        raise ConfigError(problem)
    directory = config.network_trust_directory or trust_directory()
    bundle = make_trust_directory(directory, broker.authority)
    return Brokered(broker, directory, bundle, withheld)
