"""The provider's operator configuration: backend choice, runner_command, probe limits."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence

import attrs

from ..errors import ConfigError
from ..reprs import fields_repr
from .backends import NAMES
from .tool_caches import TOOLS, check_tools

# "auto" (the platform's chain, in order) or one backend of the chain's list.
BACKEND_CHOICES = ("auto", *NAMES)
LANDLOCK_TIER_CHOICES = ("auto", "plain")


def _check_tier(_instance: object, _attribute: object, value: str) -> None:
    if value not in LANDLOCK_TIER_CHOICES:
        raise ConfigError(
            f"unknown landlock_tier {value!r} (allowed: {', '.join(LANDLOCK_TIER_CHOICES)})"
        )


def _check_backend(_instance: object, _attribute: object, value: str) -> None:
    if value not in BACKEND_CHOICES:
        raise ConfigError(f"unknown backend {value!r} (allowed: {', '.join(BACKEND_CHOICES)})")


def _check_signatures(_instance: object, _attribute: object, value: tuple[str, ...]) -> None:
    for signature in value:
        if not isinstance(signature, str) or not signature.strip() or "\n" in signature:
            raise ConfigError(
                "runner_failure_signatures entries must be non-empty single-line strings, "
                f"got {signature!r}"
            )


def _check_deny_read(_instance: object, _attribute: object, value: tuple[str, ...]) -> None:
    from ..trust import check_pattern

    for entry in value:
        problem = check_pattern(entry) if isinstance(entry, str) else "not a string"
        if problem is not None:
            raise ConfigError(f"deny_read entry {entry!r}: {problem}")


def _check_tools(_instance: object, _attribute: object, value: tuple[str, ...]) -> None:
    try:
        check_tools(value)
    except ValueError as error:
        raise ConfigError(f"tool_caches: {error}") from None


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    # `converter=tuple`, in a form mypy's attrs plugin can type (it leaves tuple's
    # element type unsolved, and then refuses every argument).
    return tuple(value)


@attrs.frozen(kw_only=True)
class ProviderConfig:
    """How the provider picks its runner.

    `runner_command` is the operator's assertion of a bwrap-compatible runner: the
    chain and its probes are skipped (also the fake-runner hook for tests).
    """

    __repr__ = fields_repr

    backend: str = attrs.field(default="auto", validator=_check_backend)
    runner_command: str | None = None
    runner_failure_signatures: tuple[str, ...] = attrs.field(
        default=(), converter=_strings, validator=_check_signatures
    )
    platform: str = sys.platform
    probe_timeout: float = 10.0
    # The operator's bwrap, instead of the fixed system locations (never PATH).
    bwrap_path: str | None = None
    # Paths kept read-only inside every writable root, beside the defaults
    # (trust.protected_set); relative to each root, or absolute. "!NAME" leaves the
    # default item NAME (one of trust.UNPROTECTABLE) writable: the composition's
    # `unprotect`.
    protected_paths: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # Files a later decision reads (the composition file): bound read-only when a
    # call could write them; refused on a backend that cannot protect them.
    trusted_files: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # Paths every confined call reads and none writes: read-only in every writable
    # root (as protected_paths) and in sight where its runtime directories are fresh
    # (network off or allowlist). The harness's CA bundle directory (issue 41), which
    # lies in the temporary directory. Not a YAML key.
    in_sight: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # Run under the Landlock launcher although stockade's own installation lies in a
    # writable root (it cannot be protected there): the claim becomes partial.
    allow_unprotected_installation: bool = False
    # Let workspace-write also write the host's shared temp roots (/tmp, $TMPDIR),
    # beside the private temp directory each session gets: for a tool that insists on
    # /tmp. They are shared with every process of the host, so the claim names them.
    allow_host_temp: bool = False
    # What no confined call may read (trust/secrets.py): the defaults, "!NAME" leaving
    # out the default item NAME, and further paths or globs (absolute, ~/..., or a
    # name or relative glob matched inside every root).
    deny_read: tuple[str, ...] = attrs.field(
        default=(), converter=_strings, validator=_check_deny_read
    )
    # Secret paths the harness knows beyond the list: a configured state directory,
    # an MCP token file kept elsewhere (deny_read's `state` and `mcp-token` items).
    secret_state: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    secret_tokens: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # Workspace roots known when the probe runs (the first call's): a runner found
    # inside one is never probed, since probing runs it unconfined.
    probe_roots: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # A one-shot caller (`stockade run`, one provider for one command): take a usable
    # verdict remembered per user, as `stockade exec` does (backends._choose), instead
    # of probing; only where the trust base's check 1 holds for the cache file against
    # `probe_roots` and the host's temp roots, which must then name every root the
    # provider's calls may write.
    remember_verdict: bool = False
    # The Landlock launcher's tier: "auto" (the strongest the host allows) or "plain"
    # (no namespace, as on a host that allows none: weaker, so a loosening key).
    landlock_tier: str = attrs.field(default="auto", validator=_check_tier)
    # Directories writable beside every session's root in workspace-write (absolute;
    # trust-checked by the harness: trust.extra_root_refusal).
    writable_roots: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # Sandbox-private tool caches (tool_caches.py): on, where (None: the default
    # directory), and for which tools.
    tool_caches: bool = True
    tool_cache_directory: str | None = None
    tool_cache_tools: tuple[str, ...] = attrs.field(
        default=TOOLS, converter=_strings, validator=_check_tools
    )
    # The agents' sockets every confined call reaches (agents.py): off by default.
    allow_ssh_agent: bool = False
    allow_gpg_agent: bool = False

    @property
    def agents(self) -> tuple[str, ...]:
        """The agents granted: "ssh", "gpg"."""
        granted = {"ssh": self.allow_ssh_agent, "gpg": self.allow_gpg_agent}
        return tuple(agent for agent, allowed in granted.items() if allowed)

    def using(self, backend: str) -> ProviderConfig:
        """This config with `backend` chosen ("auto" leaves the configured one)."""
        return self if backend == "auto" else attrs.evolve(self, backend=backend)

    def protecting(self, *paths: str) -> ProviderConfig:
        """This config with `paths` kept read-only in every confined call that could
        write them, as the composition file is (`trusted_files`)."""
        return attrs.evolve(self, trusted_files=(*self.trusted_files, *paths))

    def seeing(self, *paths: str) -> ProviderConfig:
        """This config with `paths` read by every confined call and written by none:
        kept read-only in every writable root, and in sight where the runtime
        directories are fresh (a path that does not exist is left out)."""
        return attrs.evolve(self, in_sight=(*self.in_sight, *paths))

    def hiding(self, *, state: Sequence[str] = (), tokens: Sequence[str] = ()) -> ProviderConfig:
        """This config with `state` added to deny_read's `state` item (where session
        logs live) and `tokens` to its `mcp-token` item (the harness's credential files)."""
        if not (state or tokens):
            return self
        return attrs.evolve(
            self,
            secret_state=(*self.secret_state, *state),
            secret_tokens=(*self.secret_tokens, *tokens),
        )


# Keys that loosen confinement: honoured only from a composition file that passes the
# trust base's check 1 (outside every writable root, private to the caller or root).
LOOSENING_KEYS = (
    "runner_command",
    "bwrap_path",
    "allow_unprotected_installation",
    "allow_host_temp",
    "landlock_tier",
    "writable_roots",
    "tool_cache_directory",
    "allow_ssh_agent",
    "allow_gpg_agent",
)


def trusted_provider(
    config: ProviderConfig, source: str | None, writable_roots: tuple[str, ...]
) -> ProviderConfig:
    """`config` as read from the composition file `source`, checked by the trust base.

    A file that a confined command could have written may not loosen confinement
    (ConfigError naming the key, the file and the fix); it is otherwise kept
    read-only in every confined call that could write it (`trusted_files`), or
    refused there by a backend that cannot (the Landlock launcher).
    """
    if source is None:
        return config
    from ..trust import check_trusted

    problem = check_trusted(source, writable_roots, what="the composition file")
    if problem is not None:
        loosening = [
            key for key in LOOSENING_KEYS if getattr(config, key) not in (None, False, "auto", ())
        ]
        if loosening:
            raise ConfigError(
                problem.message(
                    f"so its {', '.join(loosening)} is not honoured; move the file "
                    "outside the workspace and the temp directories, owned by you or "
                    "root and writable by no one else"
                )
            )
        if problem.root is None:
            raise ConfigError(
                problem.message("fix its owner or mode bits (chmod go-w), or move it")
            )
    return attrs.evolve(config, trusted_files=(*config.trusted_files, source))
