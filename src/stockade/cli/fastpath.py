"""`stockade exec`, the fast path: its words read without argparse (`fast_args`, which
reads `run`'s too), the composition's settings, THE confine sequence (sandbox/_confine.py),
then this very process becomes the confined argv (no trio, no event loop).

Standard library only (tests/test_cli_verbs.py holds it so): argparse, typing, trio,
attrs and msgspec would cost more than the sandbox itself.
"""

from __future__ import annotations

import errno
import os
import sys

from ..errors import SandboxUnavailable
from ..modes import Network, SandboxMode, SpawnTrait, network_under
from ..sandbox.backends import NAMES
from .errors import EXIT_ASK_FIRST, EXIT_FORBIDDEN, EXIT_UNAVAILABLE, EXIT_USAGE, say

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from ..config import Plan
    from ..sandbox import PrivateTmp
    from ._tmp_watch import TmpWatch

# `--backend`: the chain's list (sandbox/backends/), or "auto".
BACKENDS = ("auto", *NAMES)


def _fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
    # A message may name the directory exec was started in, or a path found on disk:
    # escaped (stockade.shown; imported here, on the way out, not on the fast path).
    from ..shown import escaped_lines

    say(sys.stderr, f"stockade: {escaped_lines(message)}\n")
    raise SystemExit(status)


def _unavailable(detail: str) -> NoReturn:
    _fail(f"{SandboxUnavailable.code}: {detail}", EXIT_UNAVAILABLE)


def run_exec(args: argparse.Namespace) -> NoReturn:
    """`stockade exec`: standard library only unless a stockade.yml is in play."""
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        _fail("exec needs a command after --, e.g. stockade exec -- touch ./x")
    passed = _passed_descriptors(args.pass_fd or ())
    from ..executor import EnvPolicy, apply_policy
    from .settings import (
        NO_PROVIDER,
        broad_root_problem,
        cli_settings,
        load_cli_composition,
        names_a_config,
        unconfined_refusal,
    )

    backend, timeout = args.backend, 10.0
    provider = None
    env_policy = EnvPolicy()
    withheld = None
    # The command's limits by name: the composition's, else the defaults (None).
    limit_values: dict[str, float | None] | None = None
    # network allowlist: the composition's rules, and --allow (which implies it).
    allowed: list[str] = list(getattr(args, "allow", None) or [])
    denied: list[str] = []
    if allowed:
        if args.network not in (None, Network.ALLOWLIST.value):
            _fail(f"--allow means --network allowlist, not --network {args.network}", EXIT_USAGE)
        args.network = Network.ALLOWLIST.value
    composition = load_cli_composition(args.config) if names_a_config(args.config) else None
    settings = cli_settings(
        composition, mode=args.mode, root=args.root, backend=backend, network=args.network
    )
    refusal = unconfined_refusal(settings)
    if refusal is not None:
        _unavailable(refusal)
    _judge_rules(settings, argv)
    mode, root, network = settings.mode, settings.root, settings.network
    if settings.composed:
        # Only a composition's configs are made: the embedded defaults' are known here
        # without attrs (the environment policy's defaults, no limits, no rules).
        provider = settings.provider
        if mode.confines and provider is None:
            _unavailable(NO_PROVIDER)
        env_policy, withheld = settings.executor.env, settings.executor.withheld
        limit_values = dict(settings.executor.command_limits.items())
        allowed = [*settings.executor.network_allow, *allowed]
        denied = list(settings.executor.network_deny)
        if provider is not None:
            backend, timeout = provider.backend, provider.probe_timeout
    broad = broad_root_problem(settings)
    if broad is not None:
        _fail(broad)
    # The resolved values, kept on the namespace: `exec_network(args)` is the network
    # the confined argv is built for.
    args.mode, args.network = mode, network
    # Hygiene, not confinement: the command (through the runner) gets only what the
    # environment policy leaves, in every mode. This process keeps its own (probes).
    environ, _dropped = apply_policy(os.environ, env_policy, withheld=withheld)
    if not mode.confines:
        # danger-full-access never touches the provider.
        _execute(argv, runner_is_argv0=False, environ=environ)

    from ..sandbox import Call, confine, guard_rules, remembered_runner
    from ..trust import host_temp_roots, installation_paths, resolve_workspace_root

    if os.getppid() == 1:
        # bwrap's namespace inits (a probe's, the call's) outlive bwrap: they come to
        # this process, not to a parent that may never reap them (an agent as pid 1).
        from ..executor import adopt_orphans

        adopt_orphans()

    root = resolve_workspace_root(root)
    # The extra writable roots (the composition's, --writable) and the tool caches:
    # written in workspace-write, the caches' variables set in every confining mode.
    installation = installation_paths()
    extra, cache, tools = _extra_roots(
        settings, getattr(args, "writable", None) or (), installation
    )
    runner = remembered_runner(
        sys.platform,
        backend,
        runner_command=provider.runner_command if provider else None,
        timeout=timeout,
        # The remembered verdict is trusted only where no call could have written it:
        # not in the root, the host's temp roots (writable whatever this call gets),
        # the extra roots or the caches.
        writable_roots=(root, *host_temp_roots(), *extra, *filter(None, (cache,))),
        bwrap_path=provider.bwrap_path if provider else None,
        tier=provider.landlock_tier if provider else "auto",
    )
    # One exec is one session: a private temp directory instead of /tmp, its TMPDIR,
    # removed when the command is done (read-only could not write it anyway).
    tmp: PrivateTmp | None = None
    tmp_watch: TmpWatch | None = None
    temp_roots: tuple[str, ...] = ()
    if mode is SandboxMode.WORKSPACE_WRITE:
        import atexit

        from ..sandbox import host_temp, make_private_tmp
        from ._tmp_watch import remove_and_release, watch_private_tmp

        try:
            tmp = make_private_tmp()
        except OSError as error:
            _unavailable(
                f"cannot make the command's private temp directory: {error}; set TMPDIR "
                "to a directory you may write"
            )
        # A process of its own removes it should this one be killed (SIGKILL, its group's
        # kill: an agent's timeout) while the command runs; ended once this one did.
        tmp_watch = watch_private_tmp(tmp)
        # Every way out but a signal's passes here (a refusal below, the runner's end);
        # `_execute` removes it itself before ending by the runner's signal.
        atexit.register(remove_and_release, tmp, tmp_watch)
        temp_roots = (tmp.path, *host_temp(bool(provider and provider.allow_host_temp)))
    if mode is SandboxMode.WORKSPACE_WRITE:
        temp_roots = tuple(dict.fromkeys((*temp_roots, *extra, *filter(None, (cache,)))))
    if cache is not None:
        from ..sandbox import tool_caches

        environ.update(tool_caches.variables(cache, tools, environ))
    proxy = None
    if network is Network.ALLOWLIST:
        # Issue 41: the proxy process is the broker of the composition's ruled hosts
        # too; the command gets their placeholders and the bundle trusting its CA.
        ruled = _ruled_argument(settings) if settings.composed else None
        proxy, brokered = _start_proxy(allowed, denied, ruled)
        from ..network import names_loopback, proxy_environment

        environ.update(proxy_environment(loopback_direct=not names_loopback(allowed)))
        environ.update(brokered)
    from ..trust import judge_workdir

    # The command starts where this process is: refused when that lies beneath a cover.
    workdir = judge_workdir(".").real
    # The agents the composition grants (sandbox/agents.py): their sockets, and their
    # key directories hidden all but the public files.
    granted = None
    if provider is not None and provider.agents:
        from ..sandbox import agents

        granted = agents.grant(provider.agents, os.environ)
    confined = confine(
        Call(
            tuple(argv),
            mode,
            root,
            temp_roots,
            network,
            proxy,
            workdir,
            agent_sockets=tuple((h, v) for _, h, v in granted.sockets) if granted else (),
            agent_files=granted.readable if granted else (),
            unsearched=(cache,) if cache is not None else (),
            own_roots=_own_roots(cache, tmp),
            in_sight=provider.in_sight if provider is not None else (),
        ),
        runner,
        guard_rules(provider, installation),
        # This process holds the placeholders bwrap mounts over, for as long as it runs.
        hold=True,
        # The command may inherit this terminal: it must not type into it (TIOCSTI).
        new_session=True,
    )
    if runner.tier == "plain":
        # Weaker than a namespaced call, once, where a person sees it (docs/backends.md).
        say(
            sys.stderr,
            "stockade: Landlock's plain tier (not namespaced: "
            f"{runner.tier_why or 'no namespace can be made'}): partial enforcement, "
            "see `stockade probe`\n",
        )
    if granted is not None:
        for agent, reached_at in granted.reachable(confined.agents):
            if agent == "ssh":  # the environment policy dropped the host's
                environ["SSH_AUTH_SOCK"] = reached_at
    held = confined.held
    blockers = [p.path for p in confined.guard.protections if p.kind == "block"] if held else []
    from ..limits import exec_rlimits, with_rlimits

    # No harness stays to remove a cgroup after exec: the rlimits alone (docs/limits.md).
    limited = with_rlimits(tuple(confined.argv), exec_rlimits(limit_values))
    _execute(
        list(limited),
        runner_is_argv0=True,
        held=held,
        passed=passed,
        sweep=blockers,
        # A runner that returns before its PID namespace is gone (bwrap): wait for it
        # as a child, and for the namespace's end.
        bwrap=SpawnTrait.INFO_FD in confined.traits,
        # A runner that dies with its caller (the Landlock launcher): this process waits.
        wait=SpawnTrait.CALLER_WAITS in confined.traits,
        tmp=tmp,
        tmp_watch=tmp_watch,
        environ=environ,
        # The root had no repository: what git would run of one made now is held
        # when the command is done (trust/new_repository.py), as the executor does.
        new_repository=confined.guard.new_repository,
    )


def _judge_rules(settings: Plan, argv: Sequence[str]) -> None:
    """The command rules (docs/rules.md) on the argv, in every mode. exec never asks: a
    command a rule forbids, or one a rule would ask a person about, is refused and
    nothing runs. The rules and the judge are loaded only when a rule could meet the argv
    (`rules.argv_may_apply`, standard library: its first word, or a plain `bash -c`
    script's): `exec -- true` and `exec -- bash -c true` pay nothing."""
    from ..rules import DEFAULT_FIRST_WORDS, argv_may_apply

    if settings.composed:
        from ..rules import first_words

        # A rules file a confined command could write, or a wrong rule: ConfigError,
        # one line and exit 2 (the entry), whatever the command.
        words = first_words(settings.rules.rules)
    else:
        words = DEFAULT_FIRST_WORDS  # the embedded plan's rules are the defaults
    if not argv_may_apply(argv, words):
        return
    from ..rules import render_refusal

    judgement = settings.rules.judge_argv(argv)
    if judgement.forbidden:
        _fail(f"{render_refusal(judgement)}; nothing ran", EXIT_FORBIDDEN)
    if judgement.must_ask:
        _fail(
            f"{render_refusal(judgement)}; exec never asks: nothing ran "
            "(stockade run --ask -- ARGV asks)",
            EXIT_ASK_FIRST,
        )


def _extra_roots(
    settings: Plan, writable: Sequence[str], installation: Sequence[str]
) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
    """(the extra writable roots, the tool caches' directory or None, its tools), each
    checked as the harness checks them; a refused one ends exec with its reason."""
    from ..errors import ConfigError

    setting = settings.tool_caches()
    try:
        extra = settings.writable_roots(writable, installation)
        cache = (
            None
            if setting is None
            else setting.directory_for(settings.hidden(), (settings.root,), installation)
        )
    except ConfigError as error:
        _fail(str(error), EXIT_USAGE)
    return extra, cache, setting.tools if setting is not None else ()


def _passed_descriptors(numbers: Sequence[int]) -> tuple[int, ...]:
    """The --pass-fd descriptors, each one this process inherited (open, inheritable)."""
    for fd in numbers:
        try:
            inherited = os.get_inheritable(fd)
        except OSError:
            _fail(f"--pass-fd {fd}: no such open descriptor")
        if not inherited:
            _fail(f"--pass-fd {fd}: not a descriptor this process was given")
    return tuple(dict.fromkeys(numbers))


def _close_on_exec(keep: Sequence[int]) -> None:
    """Every descriptor above 2 but `keep` closes when the runner is executed: a file
    or socket the caller left open (a log outside the root, a connected socket) would
    reach the command past every rule of the sandbox. Marked close-on-exec rather than
    closed, so that nothing of this process (a placeholder lock) loses its own."""
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every number this process may hold
        found = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for fd in found:
        if fd > 2 and fd not in keep:
            try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
                os.set_inheritable(fd, False)
            except OSError:
                pass  # not open (the listing's own descriptor)


def exec_network(args: argparse.Namespace) -> Network:
    """The network `stockade exec`'s command gets, once `run_exec` resolved `args`:
    --network, else the composition's default, else off; `on` under danger-full-access
    (which runs unconfined)."""
    return network_under(SandboxMode.parse(args.mode), Network.parse(args.network))


def _ruled_argument(settings: Plan) -> str | None:
    """The proxy process's `--ruled` JSON (network/serve.py) for the composition's
    credential and request rules: names only (the proxy process reads each value from
    its own environment, which the command's is not); None without such rules."""
    executor = settings.executor
    if not executor.has_ruled_hosts or executor.network_trust_directory is None:
        return None
    import json

    credentials = [
        {
            "host": rule.host,
            "value_from": rule.value_from,
            **{
                key: getattr(rule, key)
                for key in ("header", "scheme", "placeholder_env")
                if getattr(rule, key) is not None
            },
        }
        for rule in executor.network_credentials
    ]
    requests = [
        {
            "host": rule.host,
            "name": rule.name,
            **({"methods": sorted(rule.methods)} if rule.methods is not None else {}),
            **({"paths": list(rule.paths)} if rule.paths is not None else {}),
        }
        for rule in executor.network_requests
    ]
    return json.dumps(
        {
            "credentials": credentials,
            "requests": requests,
            "upstream_ca": executor.network_upstream_ca,
            "trust_directory": executor.network_trust_directory,
        }
    )


def _start_proxy(
    allowed: Sequence[str], denied: Sequence[str], ruled: str | None = None
) -> tuple[str, dict[str, str]]:
    """network allowlist: this call's proxy, in a process of its own (this one runs no
    event loop); it ends when this process does (its stdin closes). Its socket path,
    and with `ruled` (`_ruled_argument`) what the command's environment gets of its
    broker (the placeholders, the trust variables)."""
    import subprocess

    rules = [*(f"--allow={entry}" for entry in allowed), *(f"--deny={entry}" for entry in denied)]
    if ruled is not None:
        rules.append(f"--ruled={ruled}")
    try:
        server = subprocess.Popen(
            [sys.executable, "-I", "-m", "stockade.network.serve", *rules],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
    except OSError as error:
        _unavailable(f"cannot start the network proxy: {error}")
    assert server.stdout is not None
    path = server.stdout.readline().decode().strip()
    if not path:
        _unavailable("the network proxy did not start (its error is above)")
    # Kept open (and out of the command: CLOEXEC) for as long as this process lives.
    _KEPT.append(server)
    if ruled is None:
        return path, {}
    import json

    announced = json.loads(server.stdout.readline().decode() or "{}")
    return path, dict(announced.get("environment") or {})


def _own_roots(cache: str | None, tmp: PrivateTmp | None) -> tuple[str, ...]:
    """Exec's roots of stockade's own (`Call.own_roots`): this call's private temp
    directory, and the tool cache where it is the default one."""
    own = [tmp.path] if tmp is not None else []
    if cache is not None:
        from ..sandbox import tool_caches

        if tool_caches.is_default(cache):
            own.append(cache)
    return tuple(own)


_KEPT: list[Any] = []

# Whether this process waited for exec's command (`_execute`) and cleaned up after it
# (`_cleaned`): then nothing is left for it but its end, which the console script makes
# as the exec it stands in for would have been made (`ends_as_exec`).
_WAITED: list[bool] = []


def _cleaned(done: Callable[[], None] | None) -> Callable[[], None]:
    """`done`, then this process marked as one that may end as an exec: only once the
    runner is gone and everything is cleaned up. A way out before that (a Ctrl-C before
    run_holding ignores SIGINT, a runner that could not start) keeps the exit's own
    duties: the atexit hook that removes the private temp directory (`run_exec`)."""

    def cleaned() -> None:
        if done is not None:
            done()
        if _KEPT and os.getppid() == 1:
            _end_proxy()
        _WAITED.append(True)

    return cleaned


def _end_proxy() -> None:
    """The call's proxy told to end (its stdin closed) and reaped, bounded: where this
    process's parent is its PID namespace's init, which may never reap what exec leaves
    it (an agent as a container's pid 1). Elsewhere it ends with this process, unwaited."""
    import subprocess

    for server in _KEPT:
        try:
            server.stdin.close()
            server.wait(timeout=PROXY_END)
        except (OSError, subprocess.TimeoutExpired):
            pass


# How long exec waits for its proxy to end once told (`_end_proxy`).
PROXY_END = 2.0


def ends_as_exec() -> bool:
    """Whether `stockade exec` ran its command as a child and waited for it, in this
    process: its private temp directory is removed and its placeholders swept already,
    and what else it holds (the proxy's pipe) ends with the process. So the console
    script may end it without the interpreter's teardown, as an exec would have (some
    2 ms of every confined exec here, docs/performance.md)."""
    return bool(_WAITED)


def _execute(
    argv: list[str],
    *,
    runner_is_argv0: bool,
    held: list[int] | None = None,
    passed: Sequence[int] | None = None,
    sweep: Sequence[str] = (),
    bwrap: bool = False,
    tmp: PrivateTmp | None = None,
    tmp_watch: TmpWatch | None = None,
    wait: bool = False,
    environ: dict[str, str] | None = None,
    new_repository: str | None = None,
) -> NoReturn:
    """Become `argv`; with `held` (placeholder locks), run it and wait instead, then
    remove the placeholders at `sweep` unless another process still holds them. A
    `bwrap` argv is always run and waited for, until its PID namespace is gone
    (_exec_wait.run_holding): nothing the command started outlives exec. With `tmp`
    (the call's private temp directory, its TMPDIR) it is waited for too, and the
    directory removed afterwards (and `tmp_watch`, its watcher, released); with
    `wait`, waited for all the same.

    `passed` None: every descriptor goes with it (danger-full-access: a plain exec).
    Else only 0, 1, 2 and `passed` (--pass-fd) do, which stderr says first: the
    command may use those whatever the sandbox allows. `environ`: the environment
    it gets (the environment policy's result; None: this process's).
    `new_repository`: a workspace root that had no repository (`Guard.new_repository`),
    whose new one is held once the command is done (it is waited for then)."""
    if environ is None:
        environ = dict(os.environ)
    if passed is not None:
        _close_on_exec(passed)
        if passed:
            numbers = " ".join(map(str, passed))
            sys.stderr.write(
                f"stockade: --pass-fd {numbers}: the command may use "
                f"{'this descriptor' if len(passed) == 1 else 'these descriptors'} "
                "whatever the sandbox allows\n"
            )
    sys.stdout.flush()
    sys.stderr.flush()
    done = None
    if tmp is not None or new_repository is not None:

        def done() -> None:
            if tmp is not None:
                from ._tmp_watch import remove_and_release

                remove_and_release(tmp, tmp_watch)
            if new_repository is not None:
                _hold_new_repository(new_repository)

    try:
        if held or bwrap or wait or done is not None:
            from ._exec_wait import run_holding

            # The private directory is the command's TMPDIR (the runner reads none).
            env = {**environ, "TMPDIR": tmp.path} if tmp is not None else environ
            run_holding(argv, held or [], sweep, bwrap=bwrap, done=_cleaned(done), env=env)
        # This process becomes the command: its environment is the policy's (so the
        # program is found on the PATH the command gets; kept unless told otherwise).
        if environ != os.environ:
            os.environ.clear()
            os.environ.update(environ)
        if runner_is_argv0 and os.getppid() == 1:
            from ..executor import disown_orphans

            disown_orphans()
        os.execvp(argv[0], argv)
    except OSError as error:
        if done is not None:
            done()
        if runner_is_argv0 and error.errno in (errno.ENOENT, errno.EACCES):
            _unavailable(f"cannot start the sandbox runner {argv[0]}: {error.strerror}")
        _fail(f"cannot execute {argv[0]}: {error.strerror}", 127)


def _hold_new_repository(root: str) -> None:
    """Hold what git would run of the repository the command made in `root` (which
    had none as it started), and say so on stderr; one lstat when it made none."""
    from ..trust import repository_made

    if not repository_made(root):
        return
    from ..trust import new_repository

    held, moved = new_repository.hold(root)
    if held:
        # As `stockade run` words a note for a person (its names escaped already).
        line = new_repository.held_note(root, held, moved)
        # A reader of stderr that went away ends it quietly (the command's status stands).
        say(sys.stderr, line.replace("[sandbox: ", "stockade: ", 1).rstrip("]") + "\n")


# The options `exec` and `run` read on the fast path: option -> destination (True: a
# flag). tests/test_cli_verbs.py holds them to the parser's.
_SHARED_OPTIONS: dict[str, Any] = {
    "--mode": "mode",
    "--network": "network",
    "--config": "config",
    "--root": "root",
    "--backend": "backend",
    "--writable": "writable",
}
_EXEC_OPTIONS: dict[str, Any] = {**_SHARED_OPTIONS, "--pass-fd": "pass_fd", "--allow": "allow"}
_RUN_OPTIONS: dict[str, Any] = {
    **_SHARED_OPTIONS,
    "--timeout": "timeout",
    "--allow": "allow",
    "--limit": "limit",
    "--json": True,
    "--ask": True,
}


def fast_args(words: Sequence[str]) -> Any | None:
    """`exec`'s or `run`'s arguments when they are written the plain way (options, each
    with its value, then the command), read without argparse into what the parser
    would make of them; None for anything else (help, an error, an abbreviation, an
    option after the command, another verb), which the parser then reads."""
    if not words or words[0] not in ("exec", "run"):
        return None
    verb = words[0]
    options = _EXEC_OPTIONS if verb == "exec" else _RUN_OPTIONS
    values: dict[str, Any] = {
        "verb": verb,
        "mode": None,
        "network": None,
        "config": None,
        "root": None,
        "backend": "auto",
    }
    if verb == "run":
        values.update(timeout=None, json=False, ask=False, allow=None, limit=None, writable=None)
    else:
        values.update(pass_fd=None, allow=None, writable=None)
    index = 1
    while index < len(words):
        word = words[index]
        if word in ("-", "--") or not word.startswith("-"):
            break
        name, has_value, value = word.partition("=")
        dest = options.get(name)
        if dest is None:
            return None
        if dest is True:
            if has_value:
                return None
            values[name[2:]] = True
            index += 1
            continue
        if has_value:
            index += 1
        elif index + 1 < len(words):
            value = words[index + 1]
            index += 2
        else:
            return None
        if not value or value.startswith("-"):
            return None
        if dest == "backend" and value not in BACKENDS:
            return None
        if dest == "timeout":
            try:
                values[dest] = float(value)
            except ValueError:
                return None
            continue
        if dest in ("allow", "limit", "writable"):
            values[dest] = [*(values[dest] or ()), value]
            continue
        if dest == "pass_fd":
            if not (value.isascii() and value.isdigit()) or int(value) < 3:
                return None
            values[dest] = [*(values[dest] or ()), int(value)]
            continue
        values[dest] = value
    rest = list(words[index:])
    if verb == "exec":
        values["argv"] = rest  # argparse.REMAINDER: a leading "--" is kept, _exec drops it
    else:
        if rest[:1] == ["--"]:
            rest = rest[1:]
        elif any(word.startswith("-") for word in rest):
            return None
        if not rest:
            return None
        values["command"] = rest
    from types import SimpleNamespace

    return SimpleNamespace(**values)
