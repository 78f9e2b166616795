"""The executor's side of issue 41: the harness's broker for ruled hosts, made once when
the executor starts, the CA bundle its commands trust, and what both add to a command's environment.

The real credential values stay in the broker (this process's memory) and the CA's key
is never written; the bundle (the system's CA certificates and the harness CA's) is a
0644 file in a 0755 directory the composition plan named, which every confined call
keeps read-only and in sight.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Mapping

import attrs

from ..errors import ConfigError, brief
from .config import ExecutorConfig
from .environment import Withheld

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..network import Broker

BUNDLE_NAME = "ca-bundle.pem"
TRUST_PREFIX = "stockade-trust-"


def trust_directory(base: str | None = None) -> str:
    """A fresh name, made nowhere yet, for one harness's trust directory: in `base`
    (default: the temporary directory), unguessable, so no one can make it first."""
    return os.path.join(base or tempfile.gettempdir(), TRUST_PREFIX + secrets.token_hex(16))


@attrs.define(eq=False)
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
        shutil.rmtree(self.directory, ignore_errors=True)


def open_broker(config: ExecutorConfig, environ: Mapping[str, str]) -> Brokered | None:
    """The broker for `config`'s credential and request rules (None: no rule names a
    host), each credential's value read from `environ` (the harness's), and its bundle
    written to a new directory at `config.network_trust_directory` (one of its own in
    the temporary directory when none is named). ConfigError (one line, never a
    value): a missing or unusable credential, a CA bundle that cannot be read or
    written, an `env.set` handing a command a credential."""
    if not config.has_ruled_hosts:
        return None
    from ..network import make_broker, write_bundle

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
    try:
        # New, never an existing one (or a link planted there): its name is unguessable.
        os.mkdir(directory, 0o700)
    except OSError as error:
        raise ConfigError(
            f"the directory for the harness's CA bundle, {brief(directory)}, cannot be made: "
            f"{error.strerror or error}"
        ) from None
    try:
        bundle = write_bundle(os.path.join(directory, BUNDLE_NAME), broker.authority)
        # Readable by every command (one may run as another user), written once.
        os.chmod(directory, 0o755)
    except OSError as error:
        shutil.rmtree(directory, ignore_errors=True)
        raise ConfigError(
            f"the harness's CA bundle cannot be written in {brief(directory)}: "
            f"{error.strerror or error}"
        ) from None
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return Brokered(broker, directory, os.fspath(bundle), withheld)
