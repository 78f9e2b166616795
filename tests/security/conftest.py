"""The escape battery's fixtures and its CI summary line.

Every attempt is counted through `battery.attempt(...)`: stopped when its block
ends without an assertion failing, not stopped otherwise (an escape kept as a
strict xfail counts as not stopped). At the end of the session one line per
backend: `security battery: <backend>: N attempts, N stopped`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest

from stockade.executor.actor import ExecutorClient, open_executor
from stockade.executor.config import ExecutorConfig
from stockade.messages import JobReport, ShellResult
from stockade.sandbox.actor import ProviderClient, open_provider
from stockade.sandbox.config import ProviderConfig
from stockade.sandbox.private_tmp import make_private_tmp, remove_private_tmp
from stockade.vocab import ExecutionPolicy, Network, SandboxMode, network_under

from ..support import (
    BACKEND_VARIANTS,
    REAL_BACKENDS,
    require_backend,
    variant_backend,
    variant_tier,
)
from .support import ATTACKS, SYSTEM_PYTHON, Terrain, expected_enforcement, new_terrain

Record = tuple[str, str, str]  # (backend, attempt, outcome: stopped | NOT STOPPED | disclosed)
RECORDS = pytest.StashKey[list[Record]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[RECORDS] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    records = config.stash.get(RECORDS, [])
    if not records:
        return
    for backend in BACKEND_VARIANTS:
        mine = [record for record in records if record[0] == backend]
        attempts = [r for r in mine if r[2] != "disclosed"]
        stopped = [r for r in attempts if r[2] == "stopped"]
        disclosed = [r for r in mine if r[2] == "disclosed"]
        line = f"security battery: {backend}: {len(attempts)} attempts, {len(stopped)} stopped"
        if not mine:
            line += " (backend not run)"
        if disclosed:
            line += f"; {len(disclosed)} ungoverned by design, claimed `partial`"
        terminalreporter.write_line(line)
        for _, name, outcome in attempts:
            if outcome != "stopped":
                terminalreporter.write_line(f"  NOT STOPPED: {backend}: {name}")


@dataclass
class Battery:
    """Counts one backend's attempts for the summary line."""

    backend: str
    records: list[Record]
    names: set[str] = field(default_factory=set)

    @contextlib.contextmanager
    def attempt(self, name: str) -> Iterator[None]:
        """Stopped when the block completes; NOT STOPPED when an assertion in it fails."""
        assert name not in self.names, f"attempt {name!r} recorded twice"
        self.names.add(name)
        try:
            yield
        except pytest.skip.Exception:
            raise
        except BaseException:
            self.records.append((self.backend, name, "NOT STOPPED"))
            raise
        self.records.append((self.backend, name, "stopped"))

    def disclosed(self, name: str) -> None:
        """An effect the backend does not govern and says so (`partial`): not an attempt."""
        self.records.append((self.backend, name, "disclosed"))


@pytest.fixture(scope="session", params=REAL_BACKENDS)
def backend(request: pytest.FixtureRequest) -> tuple[str, ProviderConfig]:
    """Each real backend, forced; skipped locally and FAILED in CI when it is unusable."""
    return request.param, require_backend(request.param)


@pytest.fixture(scope="session", params=BACKEND_VARIANTS)
def variant(request: pytest.FixtureRequest) -> tuple[str, ProviderConfig]:
    """What the battery runs on: each backend, and the Landlock launcher's plain tier
    (as on a host with no namespaces); skipped locally and FAILED in CI when unusable."""
    return request.param, require_backend(request.param)


@pytest.fixture
def battery(request: pytest.FixtureRequest, variant) -> Battery:
    return Battery(backend=variant[0], records=request.config.stash[RECORDS])


@pytest.fixture(scope="session")
def nobody_attack(nobody_public) -> str:
    """`{ATTACK}` for a command run as uid 65534: the system interpreter on attacks.py
    where nobody reads it (a clone in a mode-700 home: its public copy)."""
    return f"{SYSTEM_PYTHON} -I -S {nobody_public.path(ATTACKS)}"


@pytest.fixture
def terrain() -> Iterator[Terrain]:
    made = new_terrain()
    try:
        yield made
    finally:
        made.remove()


@dataclass
class Sandbox:
    """One backend behind a real provider and executor, and the terrain it is aimed at."""

    backend: str
    provider: ProviderClient
    executor: ExecutorClient
    terrain: Terrain
    battery: Battery

    # The test's "session": its private temp directory, the commands' TMPDIR.
    temp_dir: str | None = None
    # The Landlock launcher's tier (None: bwrap).
    tier: str | None = None

    def spec(
        self,
        command: str,
        mode: SandboxMode,
        *,
        root=None,
        network=Network.OFF,
        host_temp: tuple[str, ...] = (),
        **kwargs,
    ):
        """`host_temp`: the host temp roots granted too (the `allow_host_temp` key)."""
        policy = ExecutionPolicy(
            mode=mode,
            workspace_root=str(root or self.terrain.root),
            network=network,
            temp_dir=self.temp_dir,
            host_temp=host_temp,
        )
        return self.executor.resolve(command, policy=policy, **kwargs)

    async def run(
        self,
        command: str,
        mode: SandboxMode,
        *,
        via: str = "run",
        network: Network = Network.OFF,
        **kwargs,
    ) -> ShellResult | JobReport:
        """`bash -c command` through the executor: foreground (`run`) or a background job
        (network off unless said, as the knob's default)."""
        spec = self.spec(command, mode, network=network, **kwargs)
        host_temp = kwargs.get("host_temp", ())
        if via == "job":
            handle = await self.executor.start(spec)
            result: ShellResult | JobReport = await self.executor.wait(handle.id)
        else:
            result = await self.executor.run(spec)
        assert result.backend == self.backend
        assert result.mode is mode
        assert result.network is network_under(mode, network), result
        expected = expected_enforcement(
            self.backend, mode, network, host_temp=host_temp, tier=self.tier or "namespaced"
        )
        assert result.enforcement is expected, result
        assert result.tier == self.tier, result
        return result


@pytest.fixture
async def sandbox(variant, terrain, battery) -> AsyncIterator[Sandbox]:
    name, config = variant
    tmp = make_private_tmp()
    try:
        async with (
            open_provider(config) as provider,
            open_executor(ExecutorConfig(kill_grace=0.5), provider) as executor,
        ):
            yield Sandbox(
                variant_backend(name),
                provider,
                executor,
                terrain,
                battery,
                temp_dir=tmp.path,
                tier=variant_tier(name),
            )
    finally:
        assert remove_private_tmp(tmp), f"{tmp.path} was left behind"
