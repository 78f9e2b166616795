"""Where a harness's commands find the CA bundle they trust (issue 41): a directory of
its own, made new at a name no one could guess, holding that one file. Naming it costs
the standard library only (the composition plan names it).

The harness (the executor, or `stockade exec`'s proxy process) makes it when it starts
and removes it when it ends; the composition plan names it, so that every confined
call keeps it read-only and in sight. The CA's key is never written there.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile

from ..errors import ConfigError, brief

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._authority import CertificateAuthority

BUNDLE_NAME = "ca-bundle.pem"
TRUST_PREFIX = "stockade-trust-"


def trust_directory(base: str | None = None) -> str:
    """A fresh name, made nowhere yet, for one harness's trust directory: in `base`
    (default: the temporary directory), unguessable, so no one can make it first."""
    return os.path.join(base or tempfile.gettempdir(), TRUST_PREFIX + secrets.token_hex(16))


def make_trust_directory(directory: str, authority: CertificateAuthority) -> str:
    """Make `directory` (new: never one that exists, nor a link planted there) with the
    combined bundle in it, 0755 and 0644 (a command may run as another user); the
    bundle's path. ConfigError (one line) when either cannot be made."""
    from ._authority import write_bundle  # cryptography: only where a bundle is made

    try:
        os.mkdir(directory, 0o700)
    except OSError as error:
        raise ConfigError(
            f"the directory for the harness's CA bundle, {brief(directory)}, cannot be made: "
            f"{error.strerror or error}"
        ) from None
    try:
        bundle = write_bundle(os.path.join(directory, BUNDLE_NAME), authority)
        os.chmod(directory, 0o755)  # readable once complete
    except OSError as error:
        shutil.rmtree(directory, ignore_errors=True)
        raise ConfigError(
            f"the harness's CA bundle cannot be written in {brief(directory)}: "
            f"{error.strerror or error}"
        ) from None
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return os.fspath(bundle)


def remove_trust_directory(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)
