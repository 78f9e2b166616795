"""The provider's operator configuration: backend choice, runner_command, probe limits."""

from __future__ import annotations

import sys

import attrs

from ..errors import ConfigError

BACKEND_CHOICES = ("auto", "bwrap", "landlock", "seatbelt")


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


@attrs.frozen(kw_only=True)
class ProviderConfig:
    """How the provider picks its runner.

    `runner_command` is the operator's assertion of a bwrap-compatible runner: the
    chain and its probes are skipped (also the fake-runner hook for tests).
    """

    backend: str = attrs.field(default="auto", validator=_check_backend)
    runner_command: str | None = None
    runner_failure_signatures: tuple[str, ...] = attrs.field(
        default=(), converter=tuple, validator=_check_signatures
    )
    platform: str = sys.platform
    probe_timeout: float = 10.0
