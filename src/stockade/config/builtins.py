"""The built-in plugins: their descriptors and the attrs config class each entry structures into.

Only shapes and defaults live here; the harness turns them into actors. `default_plugins()`
lays this environment's `stockade.plugins` entry points over them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from types import MappingProxyType
from typing import Any, Final, Literal

import attrs

from ..errors import ConfigError
from ..executor import (
    MIB,
    STOCKADE_OWN,
    EnvPolicy,
    ExecutorConfig,
    is_stockade_own,
    is_variable_name,
)
from ..reprs import fields_repr
from ..sandbox import ProviderConfig
from ..vocab import ApprovalPolicy, Network, SandboxMode, network_under
from .plugins import ENTRY_POINT_GROUP, Plugin, PluginTable
from .types import (
    AbsolutePath,
    AnswererName,
    FieldProblem,
    NonEmptyStr,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    PresetName,
    Regex,
    SingleLine,
    WrongType,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..network import CredentialRule, RequestRule

# `env: inherit:`; tests/executor keeps it equal to environment.INHERIT_CHOICES.
Inherit = Literal["all", "core", "none"]
# Spelled out for the type checker; tests/config keep it equal to the provider's BACKEND_CHOICES.
Backend = Literal["auto", "bwrap", "landlock", "seatbelt"]
LandlockTier = Literal["auto", "plain"]
# tests/config keep it equal to sandbox.tool_caches.TOOLS.
ToolName = Literal[
    "xdg", "pip", "uv", "npm", "yarn", "pnpm", "go", "cargo", "maven", "gradle", "ccache", "sccache"
]


@attrs.frozen(kw_only=True)
class ToolCachesConfig:
    """`tool_caches:` on (the default), off, or a mapping: where the sandbox-private
    caches live (default $XDG_CACHE_HOME/stockade/tools) and which tools use them."""

    __repr__ = fields_repr

    enabled: bool = True
    directory: AbsolutePath | None = None
    tools: tuple[ToolName, ...] = (
        "xdg",
        "pip",
        "uv",
        "npm",
        "yarn",
        "pnpm",
        "go",
        "cargo",
        "maven",
        "gradle",
        "ccache",
        "sccache",
    )

    @classmethod
    def from_scalar(cls, value: object) -> ToolCachesConfig:
        if value in ("on", True):
            return cls()
        if value in ("off", False):
            return cls(enabled=False)
        raise WrongType("on, off or a mapping (directory, tools)", value)


DEFAULT_FILE_BUDGET: Final = PositiveInt(32 * MIB)
# history.config.DEFAULT_PATHS_BUDGET (tests/config keep them equal): about 0.9 KiB of
# harness memory a path, so one root stays near 180 MiB.
DEFAULT_PATHS_BUDGET: Final = PositiveInt(200_000)
# history.config.DEFAULT_RULES_BUDGET (tests/config keep them equal).
DEFAULT_RULES_BUDGET: Final = PositiveInt(500)
# history.config.DEFAULT_BYTES_BUDGET (tests/config keep them equal).
DEFAULT_BYTES_BUDGET: Final = PositiveInt(256 * MIB)
DEFAULT_LISTED_PATHS: Final = PositiveInt(20)
DEFAULT_BASELINE_WAIT: Final = NonNegativeFloat(10.0)


@attrs.frozen(kw_only=True)
class HistorySettings:
    """`history:` of a bash entry (issue 42, docs/undo.md): on (the default), off, or a
    mapping. What each call that may write changed in its root is recorded, so a
    person can undo it; `file_budget` (bytes): a larger file is reported, never stored;
    `paths_budget`: the most paths a root's history holds (and one look at it lists),
    past which that root's history stops until the harness restarts; `rules_budget`:
    the most ignore rules one path is judged by (and 20 times it in all the root's
    ignore files), past which it stops too; `bytes_budget` (bytes): the most content
    one call's boundary reads (16 times it a harness's first look at the root), past
    which a file is reported and not stored, as one over `file_budget`;
    `record_ignored`: what `.gitignore` leaves out too; `record_git`: `.git` too;
    `listed_paths`: how many paths a result names; `baseline_wait` (seconds): how long
    a call waits for the first look at a large root before it runs unrecorded."""

    __repr__ = fields_repr

    enabled: bool = True
    record_ignored: bool = False
    record_git: bool = False
    file_budget: PositiveInt = DEFAULT_FILE_BUDGET
    paths_budget: PositiveInt = DEFAULT_PATHS_BUDGET
    rules_budget: PositiveInt = DEFAULT_RULES_BUDGET
    bytes_budget: PositiveInt = DEFAULT_BYTES_BUDGET
    listed_paths: PositiveInt = DEFAULT_LISTED_PATHS
    baseline_wait: NonNegativeFloat = DEFAULT_BASELINE_WAIT

    @classmethod
    def from_scalar(cls, value: object) -> HistorySettings:
        if value in ("on", True):
            return cls()
        if value in ("off", False):
            return cls(enabled=False)
        raise WrongType(
            "on, off or a mapping (record_ignored, record_git, file_budget, paths_budget, "
            "rules_budget, bytes_budget, listed_paths, baseline_wait)",
            value,
        )


# The default protected items `unprotect` may drop; tests/unit/test_trust.py keeps it
# equal to trust.UNPROTECTABLE.
Unprotectable = Literal[
    ".vscode",
    ".idea",
    ".mcp.json",
    ".claude",
    ".codex",
    ".cursor",
    ".gemini",
    ".zed",
    ".continue",
    ".roo",
    ".kiro",
    ".amazonq",
    ".windsurf",
    ".opencode",
    "opencode.json",
    ".devcontainer",
    ".devcontainer.json",
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.profile",
    "~/.zshrc",
    "~/.zprofile",
    "~/.zshenv",
    "~/.config/fish",
    "~/.gitconfig",
    "~/.config/git",
    "~/.ssh",
]

DEFAULT_OUTPUT_CAP: Final = PositiveInt(MIB)
DEFAULT_KILL_GRACE: Final = NonNegativeFloat(2.0)
DEFAULT_READ_CAP: Final = PositiveInt(256 * 1024)
DEFAULT_POOL_SIZE: Final = PositiveInt(10)


def _check_protected(
    _instance: object,
    attribute: attrs.Attribute[tuple[NonEmptyStr, ...]],
    value: tuple[NonEmptyStr, ...],
) -> None:
    for entry in value:
        if entry.startswith("!"):
            raise FieldProblem(
                attribute.name, f"{entry!r}: to leave a default item writable, use unprotect"
            )


def _check_deny_read(
    _instance: object,
    attribute: attrs.Attribute[tuple[NonEmptyStr, ...]],
    value: tuple[NonEmptyStr, ...],
) -> None:
    from ..trust import check_pattern

    for entry in value:
        problem = check_pattern(entry)
        if problem is not None:
            raise FieldProblem(attribute.name, f"{entry!r}: {problem}")


@attrs.frozen(kw_only=True)
class SandboxLocalConfig:
    """`stockade.sandbox.local`: which backend, or the operator's own runner."""

    __repr__ = fields_repr

    runner_command: NonEmptyStr | None = None
    runner_failure_signatures: tuple[SingleLine, ...] = ()
    backend: Backend = "auto"
    # The trust base (docs/security.md): an explicit bwrap instead of the fixed system
    # locations; paths kept read-only inside every writable root beside the defaults;
    # running under Landlock although stockade's installation is writable (partial).
    bwrap_path: AbsolutePath | None = None
    protected_paths: tuple[NonEmptyStr, ...] = attrs.field(default=(), validator=_check_protected)
    # Default protected items to leave writable (startup files, editor settings).
    unprotect: tuple[Unprotectable, ...] = ()
    allow_unprotected_installation: bool = False
    # Let workspace-write also write the host's shared temp roots (/tmp, $TMPDIR),
    # beside each session's private one; the claim names them (partial).
    allow_host_temp: bool = False
    # What no confined command may read beside the defaults; "!NAME" leaves a default
    # item out (docs/security.md, "Secrets: files").
    deny_read: tuple[NonEmptyStr, ...] = attrs.field(default=(), validator=_check_deny_read)
    # The Landlock launcher's tier: the strongest the host allows (auto), or plain
    # (no namespace) even where namespaces exist, as on a host without them.
    landlock_tier: LandlockTier = "auto"
    # Directories writable beside the workspace root in workspace-write (Codex's
    # writable_roots), each trust-checked when the harness opens.
    writable_roots: tuple[AbsolutePath, ...] = ()
    # Sandbox-private tool caches (sandbox/tool_caches.py): on, off, or a mapping.
    tool_caches: ToolCachesConfig = ToolCachesConfig()
    # The person's ssh agent and gpg-agent reachable from confined calls, their key
    # files still hidden (sandbox/agents.py): off by default.
    allow_ssh_agent: bool = False
    allow_gpg_agent: bool = False

    def provider_config(self) -> ProviderConfig:
        return ProviderConfig(
            backend=self.backend,
            runner_command=self.runner_command,
            runner_failure_signatures=self.runner_failure_signatures,
            bwrap_path=self.bwrap_path,
            # One list for every reader of it (guard, fs tools): "!NAME" drops NAME.
            protected_paths=(*self.protected_paths, *(f"!{name}" for name in self.unprotect)),
            allow_unprotected_installation=self.allow_unprotected_installation,
            allow_host_temp=self.allow_host_temp,
            deny_read=self.deny_read,
            landlock_tier=self.landlock_tier,
            writable_roots=self.writable_roots,
            tool_caches=self.tool_caches.enabled,
            tool_cache_directory=self.tool_caches.directory,
            tool_cache_tools=self.tool_caches.tools,
            allow_ssh_agent=self.allow_ssh_agent,
            allow_gpg_agent=self.allow_gpg_agent,
        )


def _check_set_names(
    _instance: object,
    attribute: attrs.Attribute[Mapping[NonEmptyStr, str]],
    value: Mapping[NonEmptyStr, str],
) -> None:
    for name in value:
        if not is_variable_name(name):
            raise FieldProblem(
                attribute.name,
                f"{name!r} is not a variable name (letters, digits and underscores, "
                "not starting with a digit)",
            )
        if is_stockade_own(name):
            # Stockade's own variables never reach a command, whatever the policy says.
            raise FieldProblem(
                attribute.name, f"{name!r}: stockade's own variables ({STOCKADE_OWN}) cannot be set"
            )


def _frozen_set(value: Mapping[NonEmptyStr, str]) -> Mapping[NonEmptyStr, str]:
    return MappingProxyType(dict(value))


@attrs.frozen(kw_only=True)
class EnvConfig:
    """`env:` of an executor entry: which of the harness's variables a command gets
    (executor/environment.py applies it; docs/security.md, "Secrets: the environment")."""

    __repr__ = fields_repr

    inherit: Inherit = "all"
    exclude: tuple[NonEmptyStr, ...] = ()
    include_only: tuple[NonEmptyStr, ...] = ()
    set: Mapping[NonEmptyStr, str] = attrs.field(
        factory=dict, converter=_frozen_set, validator=_check_set_names
    )
    keep_default_excludes: bool = True

    def policy(self) -> EnvPolicy:
        return EnvPolicy(
            inherit=self.inherit,
            exclude=self.exclude,
            include_only=self.include_only,
            set={str(name): value for name, value in self.set.items()},
            keep_default_excludes=self.keep_default_excludes,
        )


def _check_rules(
    _instance: object,
    attribute: attrs.Attribute[tuple[NonEmptyStr, ...]],
    value: tuple[NonEmptyStr, ...],
) -> None:
    from ..network import RuleError, parse_entry

    for entry in value:
        try:
            parse_entry(entry)
        except RuleError as error:
            raise FieldProblem(attribute.name, str(error)) from None


def _credential_sources(value: object) -> object:
    """`network_credentials` as the network room reads it: each `value: !env NAME` as
    `value_from: NAME`. A `value` written out is refused: a secret does not go in a
    composition file (the error never repeats it)."""
    from ._yaml import EnvReference

    if not isinstance(value, list | tuple):
        return value  # parse_credential_rules says what it wants
    sources: list[object] = []
    for index, rule in enumerate(value):
        if isinstance(rule, Mapping) and "value" in rule:
            given = rule["value"]
            where = f"network_credentials[{index}]"
            if not isinstance(given, EnvReference):
                raise ConfigError(
                    f"{where}: `value` names the variable holding the credential, "
                    "`value: !env NAME` (or `value_from: NAME`); a secret is never "
                    "written in a composition"
                )
            if "value_from" in rule:
                raise ConfigError(f"{where}: give `value: !env NAME` or `value_from`, not both")
            rule = {**{k: v for k, v in rule.items() if k != "value"}, "value_from": given.name}
        sources.append(rule)
    return sources


def credential_rules(value: object) -> tuple[CredentialRule, ...]:
    """The composition's `network_credentials` as rules (ConfigError, one line)."""
    from ..network import parse_credential_rules

    if value is None:
        return ()
    return parse_credential_rules(_credential_sources(value), "network_credentials")


def request_rules(value: object) -> tuple[RequestRule, ...]:
    """The composition's `network_requests` as rules (ConfigError, one line)."""
    from ..network import parse_request_rules

    if value is None:
        return ()
    return parse_request_rules(value, "network_requests")


def _check_network_rules(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Credential and request rules parsed now, so a wrong one is refused at load."""
    parse = credential_rules if attribute.name == "network_credentials" else request_rules
    try:
        parse(value)
    except ConfigError as error:
        raise FieldProblem(attribute.name, str(error)) from None


def _check_command_rules(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """The entry's command rules made now (every key, every example checked), so a
    wrong one is refused at load with its name."""
    from ..errors import ConfigError as RulesError
    from ..rules import RuleSet, rules_document

    try:
        entries, drop, defaults = rules_document(value)
        RuleSet.from_config(entries, defaults=defaults, drop=drop)
    except RulesError as error:
        raise FieldProblem(attribute.name, str(error)) from None


def _check_limits(
    _instance: object, attribute: attrs.Attribute[dict[str, Any]], value: dict[str, Any]
) -> None:
    """Each entry parsed now, so a bad one is refused at load with its key."""
    from ..errors import ConfigError as LimitError
    from ..limits import Limits, SessionLimits

    kind = SessionLimits if attribute.name == "session_limits" else Limits
    try:
        kind(memory=None).merged(value)
    except LimitError as error:
        raise FieldProblem(attribute.name, str(error)) from None
    if attribute.name == "limits" and "output_bytes" in value and value["output_bytes"] is None:
        raise FieldProblem(
            attribute.name,
            "output_bytes cannot be null: the harness keeps each command's capture in "
            "memory; give a size (the default is 1M)",
        )


def _with_limits(
    config: ExecutorConfig, limits: dict[str, Any], session_limits: dict[str, Any]
) -> ExecutorConfig:
    """`config` with the composition's limits; output_bytes and wall_seconds are the
    capture cap and the default timeout under their limit names (these win)."""
    from ..limits import Limits, SessionLimits

    command = Limits.defaults().merged(limits)
    changes: dict[str, Any] = {
        "limits": command,
        "session_limits": SessionLimits.defaults().merged(session_limits),
    }
    if "output_bytes" in limits and command.output_bytes is not None:
        changes["output_cap"] = command.output_bytes
    if "wall_seconds" in limits:
        changes["default_timeout"] = command.wall_seconds
    return attrs.evolve(config, **changes)


@attrs.frozen(kw_only=True)
class SandboxBashConfig:
    """`stockade.bash.sandbox`: the deployment default mode, network and fallback root,
    and limits.

    `workspace_root` None means the process's current directory when a call resolves.
    """

    __repr__ = fields_repr

    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    network: Network = Network.OFF
    workspace_root: AbsolutePath | None = None
    output_cap: PositiveInt = DEFAULT_OUTPUT_CAP
    kill_grace: NonNegativeFloat = DEFAULT_KILL_GRACE
    default_timeout: PositiveFloat | None = None
    env: EnvConfig = attrs.field(factory=EnvConfig)
    # network allowlist's destinations (docs/network.md): deny wins, empty allows none.
    network_allow: tuple[NonEmptyStr, ...] = attrs.field(default=(), validator=_check_rules)
    network_deny: tuple[NonEmptyStr, ...] = attrs.field(default=(), validator=_check_rules)
    # Issue 41 (docs/network.md, "Credentials and request rules"): a host's credential
    # the command never holds ({host, header?, scheme?, placeholder_env?, value: !env
    # NAME}), what may be asked of a host by method and path ({host, methods?, paths?,
    # name?}), and the CA bundle the proxy checks those hosts' certificates against
    # (absent: the system's). Under network allowlist only.
    network_credentials: Any = attrs.field(default=(), validator=_check_network_rules)
    network_requests: Any = attrs.field(default=(), validator=_check_network_rules)
    network_upstream_ca: AbsolutePath | None = None
    # Each command's limits and each session's (docs/limits.md): NAME: VALUE entries.
    limits: dict[str, Any] = attrs.field(factory=dict, validator=_check_limits)
    session_limits: dict[str, Any] = attrs.field(factory=dict, validator=_check_limits)
    # Command rules (docs/rules.md): a list of rules, or {rules, drop, defaults}; and a
    # rules file whose rules come first (honoured only outside every writable root).
    rules: Any = attrs.field(default=None, validator=_check_command_rules)
    rules_file: AbsolutePath | None = None
    # Undo (issue 42, docs/undo.md): on, off, or a mapping.
    history: HistorySettings = HistorySettings()

    def executor_config(self) -> ExecutorConfig:
        return _with_limits(self._executor_config(), self.limits, self.session_limits)

    def _executor_config(self) -> ExecutorConfig:
        return ExecutorConfig(
            default_mode=self.mode,
            network_allow=self.network_allow,
            network_deny=self.network_deny,
            network_credentials=credential_rules(self.network_credentials),
            network_requests=request_rules(self.network_requests),
            network_upstream_ca=self.network_upstream_ca,
            default_network=self.network,
            fallback_root=self.workspace_root,
            output_cap=self.output_cap,
            kill_grace=self.kill_grace,
            default_timeout=self.default_timeout,
            env=self.env.policy(),
        )


@attrs.frozen(kw_only=True)
class LocalBashConfig:
    """`stockade.bash.local`: the same process limits, and nothing to confine with."""

    __repr__ = fields_repr

    output_cap: PositiveInt = DEFAULT_OUTPUT_CAP
    kill_grace: NonNegativeFloat = DEFAULT_KILL_GRACE
    default_timeout: PositiveFloat | None = None
    # Hygiene, not confinement: the unconfined executor filters the same way.
    env: EnvConfig = attrs.field(factory=EnvConfig)
    limits: dict[str, Any] = attrs.field(factory=dict, validator=_check_limits)
    session_limits: dict[str, Any] = attrs.field(factory=dict, validator=_check_limits)
    # Command rules (docs/rules.md): a list of rules, or {rules, drop, defaults}; and a
    # rules file whose rules come first (honoured only outside every writable root).
    rules: Any = attrs.field(default=None, validator=_check_command_rules)
    rules_file: AbsolutePath | None = None
    # Undo (issue 42, docs/undo.md): on, off, or a mapping.
    history: HistorySettings = HistorySettings()

    def executor_config(self) -> ExecutorConfig:
        return _with_limits(self._executor_config(), self.limits, self.session_limits)

    def _executor_config(self) -> ExecutorConfig:
        # Unconfined means every command has every file effect: danger-full-access.
        return ExecutorConfig(
            default_mode=SandboxMode.DANGER_FULL_ACCESS,
            default_network=Network.ON,
            output_cap=self.output_cap,
            kill_grace=self.kill_grace,
            default_timeout=self.default_timeout,
            env=self.env.policy(),
        )


@attrs.frozen(kw_only=True)
class RejectRule:
    """Auto-reject an escalation whose command matches `pattern` (re.search), saying `reason`."""

    __repr__ = fields_repr

    pattern: Regex
    reason: NonEmptyStr


@attrs.frozen(kw_only=True)
class ApprovalConfig:
    """`stockade.approval.user`: the policy, the prepended reject rules, the answerer chain."""

    __repr__ = fields_repr

    policy: ApprovalPolicy = ApprovalPolicy.ASK
    reject: tuple[RejectRule, ...] = ()
    answerers: tuple[AnswererName, ...] = (AnswererName("terminal"),)


def _check_preset_network(
    spec: PresetSpec, attribute: attrs.Attribute[Network | None], network: Network | None
) -> None:
    if network is not None and network_under(spec.sandbox_mode, network) is not network:
        raise FieldProblem(
            attribute.name,
            f"must be 'on' for sandbox mode {spec.sandbox_mode.value!r}: it allows "
            "everything, network included",
        )


@attrs.frozen(kw_only=True)
class PresetSpec:
    """One preset: a value for each of the three knobs.

    `network` absent (None): `off`, or `on` for a danger-full-access preset.
    """

    __repr__ = fields_repr

    sandbox_mode: SandboxMode
    approval_policy: ApprovalPolicy
    network: Network | None = attrs.field(default=None, validator=_check_preset_network)

    @property
    def effective_network(self) -> Network:
        return network_under(self.sandbox_mode, self.network or Network.OFF)


def _frozen_presets(
    presets: Mapping[PresetName, PresetSpec],
) -> Mapping[PresetName, PresetSpec]:
    return MappingProxyType(dict(presets))


DEFAULT_PRESET_SPECS: Final[Mapping[PresetName, PresetSpec]] = MappingProxyType(
    {
        PresetName("workspace-write"): PresetSpec(
            sandbox_mode=SandboxMode.WORKSPACE_WRITE,
            approval_policy=ApprovalPolicy.ASK,
            network=Network.OFF,
        ),
        PresetName("danger-full-access"): PresetSpec(
            sandbox_mode=SandboxMode.DANGER_FULL_ACCESS,
            approval_policy=ApprovalPolicy.NEVER,
            network=Network.ON,
        ),
    }
)


def _check_not_empty(
    _instance: object,
    attribute: attrs.Attribute[Mapping[PresetName, PresetSpec]],
    presets: Mapping[PresetName, PresetSpec],
) -> None:
    if not presets:
        raise FieldProblem(attribute.name, "must name at least one preset")


@attrs.frozen(kw_only=True)
class PresetsConfig:
    """`stockade.permission.presets`: the table, in display order.

    A given `presets` mapping IS the table (it replaces the default, not extends it).
    """

    __repr__ = fields_repr

    presets: Mapping[PresetName, PresetSpec] = attrs.field(
        default=DEFAULT_PRESET_SPECS, converter=_frozen_presets, validator=_check_not_empty
    )


SessionStoreKind = Literal["jsonl", "postgres"]


def _check_log_store(
    # Any: it checks two fields of different types (it reads only the name).
    config: SessionLogConfig,
    attribute: attrs.Attribute[Any],
    value: object,
) -> None:
    if config.store == "postgres":
        if attribute.name == "dsn" and value is None:
            # Told at `dsn`: a `dsn: !env NAME` whose variable is unset has said so
            # already (the loader drops a second problem under a failed tag).
            raise FieldProblem(
                "dsn",
                "store postgres needs a dsn: add `dsn: !env STOCKADE_LOG_DSN` to this "
                "entry's config and set STOCKADE_LOG_DSN to a libpq connection string",
            )
        if attribute.name == "state_dir" and value is not None:
            raise FieldProblem("state_dir", "applies to store jsonl, not postgres")
    elif attribute.name == "dsn" and value is not None:
        raise FieldProblem("dsn", "applies to store postgres (add `store: postgres`)")


@attrs.frozen(kw_only=True)
class SessionLogConfig:
    """`stockade.session.log`: where logs live.

    `store: jsonl` (default): one file per session under `state_dir` (None defers to
    the store's default chain). `store: postgres`: one database every host shares, at
    `dsn` (a libpq string or URI; its password from the environment, `!env VAR`, or a
    password file), with `pool_size` connections for appends and reads (plus one that
    holds the session locks).
    """

    __repr__ = fields_repr

    store: SessionStoreKind = "jsonl"
    state_dir: AbsolutePath | None = attrs.field(default=None, validator=_check_log_store)
    dsn: NonEmptyStr | None = attrs.field(default=None, validator=_check_log_store, repr=False)
    pool_size: PositiveInt = DEFAULT_POOL_SIZE


@attrs.frozen(kw_only=True)
class FsConfig:
    """`stockade.fs.sandbox` / `stockade.fs.local`: the most bytes one read returns."""

    __repr__ = fields_repr

    read_cap: PositiveInt = DEFAULT_READ_CAP


@attrs.frozen(kw_only=True)
class McpFaceConfig:
    """`stockade.mcp`: what the MCP face (`stockade mcp`) lets the model do.

    `model_may_undo`: the `undo` tool acts without asking the person first. Off (the
    default), an undo or a restore the model asks for is put to the person through
    the client (elicitation), and refused where the client cannot ask: undo is the
    person's (issue 42).
    """

    __repr__ = fields_repr

    model_may_undo: bool = False


SANDBOX_LOCAL: Final = Plugin(
    name="stockade.sandbox.local",
    kind="sandbox",
    config_type=SandboxLocalConfig,
    summary="the per-platform runner provider",
)
BASH_SANDBOX: Final = Plugin(
    name="stockade.bash.sandbox",
    kind="executor",
    config_type=SandboxBashConfig,
    confines=True,
    summary="bash under the session's sandbox policy",
)
BASH_LOCAL: Final = Plugin(
    name="stockade.bash.local",
    kind="executor",
    config_type=LocalBashConfig,
    summary="bash, unconfined",
)
APPROVAL_USER: Final = Plugin(
    name="stockade.approval.user",
    kind="approval",
    config_type=ApprovalConfig,
    summary="asks a person before a wider retry",
)
PERMISSION_PRESETS: Final = Plugin(
    name="stockade.permission.presets",
    kind="presets",
    config_type=PresetsConfig,
    summary="named bundles of sandbox mode, approval policy and network",
)
SESSION_LOG: Final = Plugin(
    name="stockade.session.log",
    kind="log",
    config_type=SessionLogConfig,
    summary="one append-only log per session: JSON lines, or PostgreSQL for many hosts",
)
FS_SANDBOX: Final = Plugin(
    name="stockade.fs.sandbox",
    kind="fs",
    config_type=FsConfig,
    confines=True,
    summary="file tools fenced by the session's sandbox policy",
)
FS_LOCAL: Final = Plugin(
    name="stockade.fs.local",
    kind="fs",
    config_type=FsConfig,
    summary="file tools, unfenced",
)
MCP_FACE: Final = Plugin(
    name="stockade.mcp",
    kind="mcp",
    config_type=McpFaceConfig,
    summary="what the MCP face lets the model do (model_may_undo)",
)

BUILTIN_PLUGINS: Final[Mapping[str, Plugin]] = MappingProxyType(
    {
        plugin.name: plugin
        for plugin in (
            SANDBOX_LOCAL,
            BASH_SANDBOX,
            BASH_LOCAL,
            APPROVAL_USER,
            PERMISSION_PRESETS,
            SESSION_LOG,
            FS_SANDBOX,
            FS_LOCAL,
            MCP_FACE,
        )
    }
)


def default_plugins(points: Iterable[EntryPoint] | None = None) -> PluginTable:
    """The built-ins overlaid by the `stockade.plugins` entry points of this environment."""
    if points is None:
        points = entry_points(group=ENTRY_POINT_GROUP)
    return PluginTable(BUILTIN_PLUGINS, points)
