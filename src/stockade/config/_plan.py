"""THE composition plan: what a composition decides for every call of the harness, the
CLI verbs and the faces (configs as calls get them, roots, defaults), computed in one place.

Standard library only at import: it reaches the configs' own modules when it runs, so
`stockade exec` pays for none of it unless a composition is named. It decides, and reads
the filesystem (real paths, the trust base's checks) but writes nothing and spawns nothing.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..executor import ExecutorConfig
    from ..rules import RuleSet
    from ..sandbox import CacheSetting, ProviderConfig
    from ..trust import DenyRead
    from ..vocab import ApprovalPolicy, Network, SandboxMode
    from .loader import Composition


class StoreFacts:
    """What the session store says of itself that confinement must honour: where its
    logs are (deny_read's `state` item), the names and values of its login (withheld
    from every command), and the files libpq reads for it (deny_read's `mcp-token`).
    (A plain class: `typing.NamedTuple` would put `typing` on exec's path.)"""

    __slots__ = ("credential_files", "credential_names", "credential_values", "protected_paths")

    def __init__(
        self,
        protected_paths: tuple[str, ...] = (),
        credential_names: tuple[str, ...] = (),
        credential_values: tuple[str, ...] = (),
        credential_files: tuple[str, ...] = (),
    ) -> None:
        self.protected_paths, self.credential_files = protected_paths, credential_files
        self.credential_names, self.credential_values = credential_names, credential_values

    def __bool__(self) -> bool:
        return any(
            (
                self.protected_paths,
                self.credential_names,
                self.credential_values,
                self.credential_files,
            )
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoreFacts) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    __hash__ = None  # type: ignore[assignment]


def facts_of_store(store: Any) -> StoreFacts:
    """The facts a built store (a `SessionStore`) answers: the harness's way."""
    names, values = store.credentials()
    return StoreFacts(store.protected_paths(), names, values, store.credential_files())


def facts_of_config(log: Any) -> StoreFacts:
    """The same facts from a `stockade.session.log` entry's config (None: no entry)
    without making the store: the CLI verbs' way, which open no log but run commands
    beside the harness's."""
    if log is None:
        return StoreFacts()
    from ..sessionlog import config_credential_files, config_protected_paths, store_secrets

    names, values = store_secrets(log)
    return StoreFacts(config_protected_paths(log), names, values, config_credential_files(log))


class Plan:
    """What one composition decides, for one root.

    provider: the ProviderConfig every confined call gets (None: no provider entry),
    checked by the trust base and hiding the store's and the host's own secrets;
    executor: the ExecutorConfig, withholding every credential of the harness's;
    confines: commands run confined (a confining executor with a provider beside it);
    root / root_explicit: the workspace root (real path), and whether a person or the
    composition named it rather than the current directory;
    mode / network / approval_policy: the defaults (a flag given replaces them);
    unconfined: why nothing confines (None when something does).
    """

    __slots__ = (
        "_deny_read",
        "_executor",
        "_plain",
        "_provider",
        "_rules",
        "_rules_source",
        "approval_policy",
        "composed",
        "confines",
        "mode",
        "network",
        "root",
        "root_explicit",
        "unconfined",
    )

    def __init__(
        self,
        *,
        provider: ProviderConfig | Callable[[], ProviderConfig] | None,
        executor: ExecutorConfig | Callable[[], ExecutorConfig],
        composed: bool,
        confines: bool,
        root: str,
        root_explicit: bool,
        mode: SandboxMode,
        network: Network,
        approval_policy: ApprovalPolicy,
        unconfined: str | None,
        rules_source: tuple[Any, str | None] = (None, None),
    ) -> None:
        # The embedded defaults' configs are made when first asked for: `stockade exec`
        # without a composition asks for none (attrs alone is more than its budget).
        self._provider, self._executor = provider, executor
        self.composed, self.confines = composed, confines
        self.root, self.root_explicit = root, root_explicit
        self.mode, self.network, self.approval_policy = mode, network, approval_policy
        self.unconfined = unconfined
        self._deny_read: DenyRead | None = None
        # The command rules: the executor entry's document and rules file, made into
        # one set when first asked for (tree-sitter only when a script is judged).
        self._rules_source = rules_source
        self._rules: RuleSet | None = None
        # The embedded defaults with nothing added (no store facts, no host secrets):
        # their deny_read, grants and caches are known without making the configs.
        self._plain = not composed and callable(provider)

    @property
    def provider(self) -> ProviderConfig | None:
        if callable(self._provider):
            self._provider = self._provider()
        return self._provider

    @property
    def executor(self) -> ExecutorConfig:
        if callable(self._executor):
            self._executor = self._executor()
        return self._executor

    def replace(self, **changes: Any) -> Plan:
        """This plan with `changes` (field names: values) made, e.g. a flag's executor."""
        names = ("provider", "executor", *(name for name in self.__slots__ if name[0] != "_"))
        fields = {name: getattr(self, name) for name in names}
        return Plan(**{**fields, "rules_source": self._rules_source, **changes})

    @property
    def rules(self) -> RuleSet:
        """The command rules in force (docs/rules.md): the rules file's, then the
        composition's own, the defaults less those dropped; made and checked once.
        ConfigError: a rules file a confined command could have written, or a wrong rule."""
        if self._rules is None:
            from ..rules import RuleSet, read_rules_file, rules_document
            from ..trust import host_temp_roots

            document, path = self._rules_source
            entries, drop, defaults = rules_document(document)
            if path is not None:
                from_file, file_drop, file_defaults = read_rules_file(
                    path, (self.root, *host_temp_roots(), *_granted_roots(self.provider))
                )
                entries = [*from_file, *entries]
                drop = [*file_drop, *drop]
                defaults = defaults and file_defaults
            self._rules = RuleSet.from_config(entries, defaults=defaults, drop=drop)
        return self._rules

    @property
    def deny_read(self) -> DenyRead | None:
        """What no confined command may read (None: no provider); worked out once."""
        if self._deny_read is None:
            from ..trust import deny_read_for

            plain = self._plain and callable(self._provider)
            if not plain and self.provider is None:
                return None
            self._deny_read = deny_read_for(None if plain else self.provider)
        return self._deny_read

    def hidden(self) -> list[str]:
        """deny_read's literal paths: what no writable grant may hold or lie in."""
        deny_read = self.deny_read
        return deny_read.literal_paths() if deny_read is not None else []

    @property
    def agents(self) -> tuple[str, ...]:
        """The agents whose sockets every confined call reaches."""
        return self.provider.agents if self.confines and self.provider is not None else ()

    def writable_roots(
        self,
        extra: Sequence[str | os.PathLike[str]] = (),
        installation: Sequence[str] | None = None,
    ) -> tuple[str, ...]:
        """The composition's writable roots and `extra` (a `--writable`), each judged as
        an extra writable root (ConfigError: the first refused, and why); their real paths."""
        configured: tuple[str, ...] = ()
        if self.confines and not self._plain and self.provider is not None:
            configured = self.provider.writable_roots
        if not (configured or extra):
            return ()
        from ..trust import check_extra_roots

        return check_extra_roots((*configured, *extra), self.hidden(), installation=installation)

    def tool_caches(self) -> CacheSetting | None:
        """The tool caches every confined call gets (None: off, or nothing confines)."""
        from ..sandbox import tool_caches

        if self._plain:
            return tool_caches.CacheSetting(True, None, tool_caches.TOOLS)
        provider = self.provider
        if not (self.confines and provider is not None and provider.tool_caches):
            return None
        return tool_caches.CacheSetting(
            True, provider.tool_cache_directory, provider.tool_cache_tools
        )


def plan(
    composition: Composition | None,
    *,
    store: StoreFacts | None = None,
    root: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    backend: str = "auto",
    mode: str | None = None,
    network: str | None = None,
    withhold: Sequence[str] = (),
    unreadable: Sequence[str] = (),
) -> Plan:
    """What `composition` (None: the embedded defaults, built without reading YAML)
    decides.

    `store`: the session store's facts (None: it has none). `root`: a root named for
    this run (`--root`); it wins over the composition's `fallback_root`, which wins
    over `cwd` (an embedder's directory), which wins over the current directory.
    `backend`: one chosen for this run ("auto": the composition's). `mode`, `network`:
    values chosen for this run (parsed here; None: the defaults). `withhold`: secret
    values of the host's own (MCP tokens) no command may inherit. `unreadable`: secret
    files of the host's own (an MCP `--token-file`) no confined command may read.
    ConfigError: the composition file may not loosen what it asks to, or `env.set`
    would hand a command a withheld credential.
    """
    from ..modes import ApprovalPolicy, Network, SandboxMode

    if store is None:
        store = StoreFacts()
    if composition is None:
        return _embedded_plan(store, root, cwd, backend, mode, network, withhold, unreadable)
    from ..executor import ExecutorConfig

    entry = composition.provider
    provider = None if entry is None else entry.config.provider_config().using(backend)
    executor_entry = composition.executor
    executor = (
        ExecutorConfig() if executor_entry is None else executor_entry.config.executor_config()
    )
    # Confining is a fact of what runs, not of a name: only with a provider beside it
    # (the loader requires one; a Composition built in code may not have it).
    confines = (
        executor_entry is not None and executor_entry.plugin.confines and provider is not None
    )
    unconfined = None
    if not confines:
        from ..policy import unconfined_reason

        unconfined = unconfined_reason(executor_entry.name if executor_entry else None)
    approval_entry = composition.approval
    approval = approval_entry.config.policy if approval_entry else ApprovalPolicy.NEVER
    source = composition.path
    executor = _withholding(executor, store, withhold)
    chosen_root = root or executor.fallback_root or cwd or os.getcwd()
    workspace = os.path.realpath(chosen_root)
    if source is not None:
        _check_rules_trusted(source, _rules_source(executor_entry), workspace, provider)
    if executor.has_ruled_hosts:
        executor = _brokering(executor, source, workspace, provider)
    if provider is not None:
        if source is not None:
            # A composition file a command could write may not loosen confinement, and
            # is kept read-only (or refused) in every call that could write it.
            from ..sandbox import trusted_provider
            from ..trust import host_temp_roots

            provider = trusted_provider(provider, source, (workspace, *host_temp_roots()))
        rules_file = _rules_source(executor_entry)[1]
        if rules_file is not None:
            # Like the composition file: read-only in every confined call that could
            # write it (a session's own root, a --writable directory).
            provider = provider.protecting(rules_file)
        # Where the logs are (deny_read's `state` item: the default directories are in
        # it already), and the files holding a login (the store's: every file libpq
        # would read for its DSN; the host's own: an MCP --token-file).
        provider = _hiding(provider, store, unreadable)
        trust = executor.network_trust_directory
        if trust is not None:
            # The CA bundle every command trusts: read-only in every call that could
            # write it, and in sight in every call that sees /tmp fresh.
            provider = provider.seeing(trust)
    if confines and provider is not None and provider.tool_caches:
        # A call's environment points these tools' cache variables into the caches.
        executor = executor.caching(provider.tool_cache_tools)
    # Without a sandbox one mode and one network are true (nothing refuses a file
    # effect, nothing cuts the network off); one asked for is refused by whoever asked
    # (`unconfined_refusal`).
    chosen_mode = (
        SandboxMode.parse(mode)
        if mode is not None
        else executor.default_mode
        if confines
        else SandboxMode.DANGER_FULL_ACCESS
    )
    chosen_network = (
        Network.parse(network)
        if network is not None
        else executor.default_network
        if confines
        else Network.ON
    )
    return Plan(
        provider=provider,
        executor=executor,
        composed=True,
        confines=confines,
        root=workspace,
        root_explicit=bool(root or executor.fallback_root or cwd),
        mode=chosen_mode,
        network=chosen_network,
        approval_policy=approval,
        unconfined=unconfined,
        rules_source=_rules_source(executor_entry),
    )


def _embedded_plan(
    store: StoreFacts,
    root: str | None,
    cwd: str | os.PathLike[str] | None,
    backend: str,
    mode: str | None,
    network: str | None,
    withhold: Sequence[str],
    unreadable: Sequence[str],
) -> Plan:
    """The embedded defaults' plan, its configs made when first asked for (the same
    values the embedded stockade.yml gives: tests/config holds them equal)."""
    from ..modes import DEFAULT_MODE, DEFAULT_NETWORK, ApprovalPolicy, Network, SandboxMode

    def provider() -> ProviderConfig:
        from ..sandbox import ProviderConfig

        return _hiding(ProviderConfig(backend=backend), store, unreadable)

    added = bool(store) or bool(unreadable) or bool(withhold)

    def executor() -> ExecutorConfig:
        from ..executor import ExecutorConfig
        from ..sandbox import tool_caches

        # Tool caches are on by default: a call's environment points them there.
        return _withholding(ExecutorConfig().caching(tool_caches.TOOLS), store, withhold)

    return Plan(
        provider=provider() if added else provider,
        executor=executor() if added else executor,
        composed=False,
        confines=True,
        root=os.path.realpath(root or cwd or os.getcwd()),
        root_explicit=bool(root or cwd),
        mode=DEFAULT_MODE if mode is None else SandboxMode.parse(mode),
        network=DEFAULT_NETWORK if network is None else Network.parse(network),
        approval_policy=ApprovalPolicy.ASK,
        unconfined=None,
    )


def _withholding(
    executor: ExecutorConfig, store: StoreFacts, withhold: Sequence[str]
) -> ExecutorConfig:
    """The harness's own secrets never reach a command, whatever `env:` says."""
    names, values = store.credential_names, (*store.credential_values, *withhold)
    if not (names or values):
        return executor
    from ..executor import Withheld

    return executor.withholding(Withheld(names, values))


def _brokering(
    executor: ExecutorConfig, source: str | None, workspace: str, provider: ProviderConfig | None
) -> ExecutorConfig:
    """An executor whose credential or request rules name hosts (issue 41): each
    credential's variable withheld from every command, by name and by value; the
    directory its CA bundle is written to named; and, from a composition file a
    confined command could write, no credential and no upstream CA honoured (the
    command could point one at a host of its own). ConfigError."""
    from ..executor import Withheld
    from ..network import trust_directory

    roots = None
    if source is not None or executor.network_upstream_ca is not None:
        from ..trust import host_temp_roots

        roots = (workspace, *host_temp_roots(), *_granted_roots(provider))
    if source is not None and (executor.network_credentials or executor.network_upstream_ca):
        _check_credentials_trusted(source, roots or ())
    if executor.network_upstream_ca is not None:
        from ..errors import ConfigError
        from ..trust import check_trusted

        problem = check_trusted(
            executor.network_upstream_ca, roots or (), what="network_upstream_ca"
        )
        if problem is not None:
            raise ConfigError(
                problem.message(
                    "the proxy would check origins against what a command wrote; keep the "
                    "CA bundle outside the workspace and the temp directories"
                )
            )
    names = tuple(dict.fromkeys(rule.value_from for rule in executor.network_credentials))
    if names:
        values = tuple(os.environ.get(name, "") for name in names)
        executor = executor.withholding(Withheld(names, values))
    from attrs import evolve

    return evolve(executor, network_trust_directory=trust_directory())


def _check_credentials_trusted(source: str, roots: Sequence[str]) -> None:
    """A composition file a confined command could have written may limit what is asked
    of a host (request rules), never hand a credential to one or choose whom the proxy
    trusts upstream. ConfigError."""
    from ..errors import ConfigError
    from ..trust import check_trusted

    problem = check_trusted(source, roots, what="the composition file")
    if problem is not None:
        raise ConfigError(
            problem.message(
                "so its network_credentials and network_upstream_ca are not honoured (a "
                "command that wrote it could send a credential to a host of its own); "
                "move the file outside the workspace and the temp directories, owned by "
                "you or root and writable by no one else"
            )
        )


def _hiding(
    provider: ProviderConfig, store: StoreFacts, unreadable: Sequence[str]
) -> ProviderConfig:
    """Where the logs are (deny_read's `state` item: the default directories are in it
    already), and the files holding a login (the store's: every file libpq would read
    for its DSN; the host's own: an MCP --token-file)."""
    return provider.hiding(
        state=store.protected_paths,
        tokens=(*map(os.path.abspath, unreadable), *store.credential_files),
    )


def _rules_source(entry: Any) -> tuple[Any, str | None]:
    """The executor entry's command rules: (its `rules` document, its `rules_file`);
    (None, None), the defaults alone, for an entry without them."""
    config = getattr(entry, "config", None)
    return getattr(config, "rules", None), getattr(config, "rules_file", None)


def _granted_roots(provider: ProviderConfig | None) -> tuple[str, ...]:
    """The directories a composition lets confined calls write beside each root: its
    writable roots and a named tool caches' directory."""
    if provider is None:
        return ()
    named = (provider.tool_cache_directory,) if provider.tool_cache_directory else ()
    return (*provider.writable_roots, *named)


def _check_rules_trusted(
    source: str,
    rules_source: tuple[Any, str | None],
    workspace: str,
    provider: ProviderConfig | None,
) -> None:
    """A composition file a confined command could have written may add rules that
    forbid or ask, and nothing that loosens: no allow rule, no dropped default, no
    `defaults: false`, no rules file (which could bring any of them). ConfigError."""
    document, rules_file = rules_source
    if document is None and rules_file is None:
        return
    from ..errors import ConfigError
    from ..rules import rules_document
    from ..trust import check_trusted, host_temp_roots

    problem = check_trusted(
        source,
        (workspace, *host_temp_roots(), *_granted_roots(provider)),
        what="the composition file",
    )
    if problem is None:
        return
    entries, drop, defaults = rules_document(document)
    loosening = [
        *(["an allow rule"] if any(_allows(entry) for entry in entries) else []),
        *(["drop"] if drop else []),
        *(["defaults: false"] if not defaults else []),
        *(["rules_file"] if rules_file is not None else []),
    ]
    if loosening:
        raise ConfigError(
            problem.message(
                f"so its command rules' {', '.join(loosening)} are not honoured (only "
                "rules that forbid or ask are); move the file outside the workspace and "
                "the temp directories, owned by you or root and writable by no one else"
            )
        )


def _allows(entry: Any) -> bool:
    decision = entry.get("decision") if hasattr(entry, "get") else None
    return str(decision).strip().lower() == "allow"
