"""The escape battery, processes that outlive their command: a grandchild left behind,
one the parent waits for, and one that leaves the process group with setsid. Each
tries to write outside after a delay; none may succeed, and none may be left
running afterwards. Foreground and background job, bwrap AND Landlock.

The six attempts of one mode run at once (they sleep; in sequence they would cost
seconds), each aimed at its own file, then each is judged on its own.
"""

from __future__ import annotations

import uuid

import pytest
import trio

from .support import MODES, WW, describe_change, live_processes_with

VARIANTS = {
    # The brief's shape: the parent exits at once, the grandchild writes 0.2 s later.
    "orphaned-grandchild": "(sleep 0.2; echo x > {T}; : {M}) & exit 0",
    # The parent waits, so the grandchild really runs while the sandbox is up.
    "waited-grandchild": "(sleep 0.1; echo x > {T}; echo ran > {W}/{N}-ran; : {M}) & wait",
    # Leaves the process group: the executor's group kill cannot reach it (the call's
    # PID namespace does).
    "setsid-survivor": (
        "setsid -f bash -c 'sleep 0.3; echo x > {T}; echo ran > {W}/{N}-survived; : {M}' "
        ">/dev/null 2>&1; "
        "sleep 0.05; exit 0"
    ),
}
VIAS = ("run", "job")


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
async def test_a_process_that_outlives_its_command_stays_confined(sandbox, mode):
    terrain = sandbox.terrain
    tag = terrain.host_name("").rstrip("-")
    cases = []
    for variant, template in sorted(VARIANTS.items()):
        for via in VIAS:
            name = f"{variant}-{via}"
            marker = f"stockade-sec-marker-{uuid.uuid4().hex}"
            target = terrain.outside / name
            command = template.format(T=target, W=terrain.root, H=tag, N=name, M=marker)
            cases.append((variant, via, name, marker, target, command))
    before = terrain.state()
    returned: dict[str, list[int]] = {}

    async def attempt(name, marker, command, via):
        await sandbox.run(command, mode, via=via)
        returned[name] = live_processes_with(marker)

    async with trio.open_nursery() as nursery:
        for _, via, name, marker, _, command in cases:
            nursery.start_soon(attempt, name, marker, command, via)
    await trio.sleep(0.8)  # past every delay above
    # A loaded machine may run the survivors late: give them time to finish (or not).
    with trio.move_on_after(5):
        while any(live_processes_with(case[3]) for case in cases):
            await trio.sleep(0.1)

    for variant, via, name, marker, target, _ in cases:
        with sandbox.battery.attempt(f"{variant} ({mode.value}, {via})"):
            assert not target.exists(), f"{name} wrote outside after its command returned"
            assert terrain.state() == before, describe_change(before, terrain.state())
            assert live_processes_with(marker) == [], f"{name} is still running"
            # Gone when the call returns, setsid or not: the call's PID namespace ends
            # with its command (bwrap's; the Landlock launcher's own).
            assert returned[name] == [], f"{name} outlived its command"
            if variant == "waited-grandchild" and mode is WW:
                # Evidence the attempt was real: the grandchild ran (and wrote where it may).
                assert (terrain.root / f"{name}-ran").exists()
            if variant == "setsid-survivor":
                # It never ran after its command had returned, not even where it may write.
                assert not (terrain.root / f"{name}-survived").exists()
