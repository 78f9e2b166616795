"""Harness: the running composition, as a host holds it once `open_harness()` started it.

It opens and resumes sessions (refusing a root or a log a command could abuse) and
lists the mounted tools' schemas; it holds the actors' clients, never their state.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs

from .. import tools
from ..approval import ApprovalClient
from ..config import Composition
from ..errors import ConfigError
from ..executor import ExecutorClient
from ..policy import PolicyDefaults, PresetTable
from ..reprs import fields_repr
from ..sandbox import CacheSetting, ProviderClient
from ..sessionlog import SessionLogClient, check_store_files
from ..tools import BashTool, FsTool, PinnedRoots, fs_schemas
from ..trust import DenyRead, broad_root_refusal, check_extra_roots, check_trusted, host_temp_roots
from ..vocab import ExecutionPolicy
from ._history import Histories
from .agent import AgentSession
from .session import Session, SessionNotFound, check_workspace_root


@attrs.define(eq=False)
class Harness:
    """The running composition. Create it with `open_harness()`."""

    __repr__ = fields_repr

    composition: Composition
    log: SessionLogClient
    executor: ExecutorClient
    provider: ProviderClient | None
    approval: ApprovalClient | None
    defaults: PolicyDefaults
    presets: PresetTable
    bash: BashTool
    fs: FsTool | None = None
    # The paths holding the session logs, which no command may write or read (the
    # store's `protected_paths`; none: in memory for this process only, or a database).
    log_paths: tuple[str, ...] = ()
    # Files that steer where the log is (a database's password file): (path, what).
    log_files: tuple[tuple[str, str], ...] = ()
    # Whether the fallback root was named (a composition's workspace_root, open_harness's
    # cwd) rather than taken from the process's current directory.
    fallback_root_explicit: bool = True
    # The host temp roots every session's calls may write beside its private temp
    # directory: only where the composition restores them (`allow_host_temp`).
    host_temp: tuple[str, ...] = ()
    # What no confined command may read (the provider's deny_read), when commands are
    # confined.
    deny_read: DenyRead | None = None
    # Directories every session's calls may write beside its root in workspace-write
    # (the composition's writable_roots, trust-checked when the harness opened), and
    # the sandbox-private tool caches' setting (None: off, or commands unconfined):
    # their directory is made as each session opens, never inside its root.
    writable_roots: tuple[str, ...] = ()
    tool_caches: CacheSetting | None = None
    # The agents whose sockets every session's confined calls reach (the
    # composition's allow_ssh_agent and allow_gpg_agent): "ssh", "gpg".
    agents: tuple[str, ...] = ()
    # What each call that may write changed in its root, per root (issue 42,
    # docs/undo.md); None: not kept.
    history: Histories | None = None
    # Sessions open now: a private temp directory one leaves is removed when the
    # harness stops (after every command is gone).
    _open: set[Session] = attrs.field(factory=set, init=False)

    @property
    def confines(self) -> bool:
        """Whether the mounted executor confines (and so whether escalation exists)."""
        return self.executor.confines

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Function-calling schemas of the mounted tools."""
        mounted = [
            tools.bash_schema(confines=self.confines),
            tools.job_output_schema(),
            tools.kill_job_schema(),
        ]
        if self.fs is not None:
            mounted += fs_schemas(escalation=self.fs.escalation)
        return mounted

    def out_of_confined_reach(self, path: str) -> bool:
        """Whether no confined command of this harness can read `path`, whatever its
        mode, workdir or network: deny_read names it, by its real path (vacuously true
        when nothing is confined: no command then has a boundary to cross)."""
        if not self.confines:
            return True
        if self.deny_read is None:
            return False
        return self.deny_read.denies(os.path.realpath(path), ())

    def check_log_out_of_reach(self, cwd: str | os.PathLike[str] | None) -> None:
        """The log is the only store of a session's mode: no command may write it.

        A log under the session's root or a temp root could be rewritten by a
        workspace-write command into danger-full-access for the next resume. The
        whole chain of directories is checked (the trust base's check 1): a writable
        parent could swap the log directory itself. Every mode counts the root as
        writable (a knob or an escalation can widen any session to workspace-write),
        so no later knob change can widen what this check covered.
        """
        root = os.path.realpath(cwd) if cwd is not None else self.defaults.fallback_root
        if self.log_files:
            check_store_files(self.log_files, (root, *host_temp_roots()))
        for path in self.log_paths:
            problem = check_trusted(
                path,
                (root, *host_temp_roots()),
                what="the session log directory",
                must_exist=False,
            )
            if problem is not None:
                raise ConfigError(
                    problem.message(
                        "keep session logs outside workspace roots and temp directories, "
                        "owned by you or root and writable by no one else: set "
                        "STOCKADE_STATE_DIR or the stockade.session.log entry's state_dir"
                    )
                )

    def register_session(self, session: Session) -> None:
        """Count `session` among the open ones: the harness closes it if still open
        when the harness closes."""
        self._open.add(session)

    def forget_session(self, session: Session) -> None:
        """`session` has closed: the harness no longer closes it (idempotent)."""
        self._open.discard(session)

    @property
    def default_policy(self) -> ExecutionPolicy:
        """What a call resolves to with no session override: the composition's default."""
        return ExecutionPolicy(
            self.defaults.sandbox_mode, self.defaults.fallback_root, self.defaults.network
        )

    def pin_fs_roots(self, session: Session) -> PinnedRoots | None:
        """The session's writable roots, pinned for the fenced fs tools (None: none mounted).

        Pinned as the session opens, so a root a command swaps for a symlink later is
        refused, never followed (docs/fs-tools.md, "Pinned roots")."""
        if self.fs is None or not self.fs.fenced:
            return None
        # The session's own temp roots: its private directory (and the host's where the
        # composition restores them), as its commands have them.
        temp_roots = (
            *filter(None, (session.temp_dir,)),
            *session.host_temp,
            *session.writable_roots,
        )
        return PinnedRoots.pin(session.cwd or self.defaults.fallback_root, temp_roots)

    async def open_session(
        self,
        session_id: str | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        resume: bool = False,
        writable_roots: Sequence[str | os.PathLike[str]] = (),
        allow_ssh_agent: bool = False,
        allow_gpg_agent: bool = False,
    ) -> AgentSession:
        """Create a new session (its cwd, an existing directory, is its workspace root),
        or with `resume=True` resume session `session_id` from its log.

        `writable_roots`: directories this session's calls may write beside its root in
        workspace-write, each trust-checked (ConfigError naming why one is refused);
        kept in its log, so a resumed session has them without naming them again.
        `allow_ssh_agent`, `allow_gpg_agent`: its confined calls reach the person's ssh
        agent, gpg-agent (beside what the composition grants every session; the key
        files stay hidden); kept in its log like its writable roots.

        Creating under an id that already names a session raises SessionExists; resuming
        an id no log holds raises SessionNotFound (and writes nothing). `resume_session`
        is the same as `resume=True`.
        """
        if resume and session_id is None:
            raise ValueError("resume=True needs the session_id of the session to resume")
        check_workspace_root(cwd, "the session's cwd")
        if cwd is None and not resume and self.confines:
            # Every mode counts the root as writable: a knob, a preset or an
            # escalation can widen any session to workspace-write.
            broad = broad_root_refusal(
                self.defaults.fallback_root,
                explicit=self.fallback_root_explicit,
                home=os.environ.get("HOME"),
                naming="cwd={root!r} to open_session",
            )
            if broad is not None:
                raise ConfigError(broad)
        self.check_log_out_of_reach(cwd)
        own_roots = self.check_writable_roots(writable_roots) if writable_roots else ()
        granted = {"ssh": allow_ssh_agent, "gpg": allow_gpg_agent}
        own_agents = tuple(agent for agent, allowed in granted.items() if allowed)
        if own_agents and not self.confines:
            raise ConfigError(
                "allow_ssh_agent and allow_gpg_agent need a sandbox: this composition runs "
                "commands unconfined, where every socket is reachable already"
            )
        if resume:
            await self._check_log_exists(session_id)
        session = await Session.open(
            self.log,
            session_id=session_id,
            cwd=cwd,
            defaults=self.defaults,
            presets=self.presets,
            resume=resume,
            # Only where commands are confined: there /tmp is not theirs to write.
            private_tmp=self.confines,
            host_temp=self.host_temp,
            writable_roots=self.writable_roots,
            own_writable_roots=own_roots,
            agents=self.agents,
            own_agents=own_agents,
            tool_cache_for=self._tool_cache_for if self.tool_caches is not None else None,
        )
        self.register_session(session)
        agent = AgentSession(harness=self, session=session, fs_roots=self.pin_fs_roots(session))
        if resume and cwd is None:
            # Its root comes from its log: one removed since would fail every call.
            try:
                check_workspace_root(session.cwd, f"session {session.id!r}'s workspace root")
            except BaseException:
                await agent.close()
                raise
        return agent

    def _tool_cache_for(self, root: str) -> str | None:
        """The tool caches' directory for a session rooted at `root`, made now; None
        when off or when it would lie in or over the root."""
        if self.tool_caches is None:
            return None
        hidden = self.deny_read.literal_paths() if self.deny_read is not None else ()
        return self.tool_caches.directory_for(hidden, (root,))

    def check_writable_roots(self, paths: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
        """`paths` as extra writable roots (real paths), or ConfigError naming the first
        refused and why (trust.extra_root_refusal)."""
        if not self.confines:
            raise ConfigError(
                "writable_roots need a sandbox: this composition runs commands unconfined, "
                "where every directory is writable already"
            )
        hidden = self.deny_read.literal_paths() if self.deny_read is not None else ()
        return check_extra_roots(paths, hidden)

    async def resume_session(
        self, session_id: str, *, cwd: str | os.PathLike[str] | None = None
    ) -> AgentSession:
        """Resume session `session_id` from its log; SessionNotFound when none holds it."""
        return await self.open_session(session_id, cwd=cwd, resume=True)

    async def _check_log_exists(self, session_id: str | None) -> None:
        """An unknown id is refused before its log would be opened (and so created
        empty); the session is checked again once its log is open."""
        if session_id is None:
            return
        found = await self.log.find(session_id)
        if not found.exists:
            raise SessionNotFound(session_id, found.location)

    async def session_exists(self, session_id: str) -> bool:
        """Whether the session log holds `session_id` (InvalidSessionId for an id that
        cannot name one)."""
        return (await self.log.find(session_id)).exists
