"""In-process request/reply messages: one closed tagged union per actor inbox.

Plain data only: a reply channel rides beside a message in its envelope
(`_mailbox.Envelope`), never inside it, so every message can be logged and replayed.
"""

from __future__ import annotations

import msgspec

from .vocab import Enforcement, SandboxPolicy


class RunnerFailureRule(msgspec.Struct, frozen=True):
    """Evidence that the sandbox runner itself failed, not the command.

    A settled process matches when its exit code is in `exit_codes` (no gate when
    None) AND some stderr line, after removing lines equal to an
    `informational_lines` entry, starts with one of `fatal_signatures`.
    """

    exit_codes: frozenset[int] | None
    fatal_signatures: tuple[str, ...]
    informational_lines: tuple[str, ...] = ()


# --- ProviderActor inbox ---------------------------------------------------------


class Confine(msgspec.Struct, frozen=True, tag="confine"):
    """Turn `argv` into the argv to spawn instead, confined under `policy`."""

    argv: tuple[str, ...]
    policy: SandboxPolicy


class Describe(msgspec.Struct, frozen=True, tag="describe"):
    """Report the platform chain, every candidate's verdict and the selection."""


ProviderRequest = Confine | Describe


class Wrapped(msgspec.Struct, frozen=True, tag="wrapped"):
    """The confined argv plus the facts needed to classify what it does."""

    argv: tuple[str, ...]
    backend: str
    enforcement: Enforcement
    denial_signatures: tuple[str, ...]
    runner_failure_rules: tuple[RunnerFailureRule, ...]


class CandidateReport(msgspec.Struct, frozen=True):
    """One backend of the chain as its probe found it."""

    backend: str
    usable: bool
    runner: str | None = None
    why_not: str | None = None
    abi: int | None = None
    # Per confining mode: what this backend governs there (see docs/security.md).
    enforcement: dict[str, Enforcement] = {}
    ungoverned: dict[str, tuple[str, ...]] = {}
    probed: bool = True


class ProviderReport(msgspec.Struct, frozen=True, tag="provider-report"):
    platform: str
    chain: tuple[str, ...]
    candidates: tuple[CandidateReport, ...]
    selected: str | None
    detail: str | None = None
