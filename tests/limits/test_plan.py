"""How each limit is held on a host and what may be claimed: every branch of the plan,
root and not, and the launcher's rlimit pairs it implies."""

from __future__ import annotations

from stockade.limits import Claim, Enforcement, HostLimits, Limits, Mechanism, plan, rlimits

G = 1024**3
ALL = frozenset({"pids", "memory", "cpu"})
LIMITS = Limits(
    processes=512,
    memory=2 * G,
    cpu_seconds=29.2,
    wall_seconds=60.0,
    output_bytes=1048576,
    file_size=16 * G,
    open_files=65536,
)


def held(limit: Enforcement) -> tuple[Mechanism, Claim, str]:
    return limit.mechanism, limit.claim, limit.detail


def test_a_v2_cgroup_with_every_controller_enforces_everything():
    planned = plan(LIMITS, HostLimits(cgroup="v2", controllers=ALL, uid=1000, swap=True))
    assert list(planned) == [name for name, _ in LIMITS.items()]
    assert all(limit.claim is Claim.ENFORCED for limit in planned.values())
    assert planned["memory"] == Enforcement(
        "memory", 2 * G, Mechanism.CGROUP_V2, Claim.ENFORCED, "memory.max with memory.swap.max 0"
    )
    assert held(planned["processes"]) == (
        Mechanism.CGROUP_V2,
        Claim.ENFORCED,
        "pids.max of the command's cgroup",
    )
    assert held(planned["cpu_seconds"]) == (
        Mechanism.HARNESS,
        Claim.ENFORCED,
        "the cgroup's CPU time, checked by the harness every 0.25 s (and RLIMIT_CPU for each "
        "process)",
    )
    assert held(planned["wall_seconds"])[:2] == (Mechanism.HARNESS, Claim.ENFORCED)
    assert held(planned["output_bytes"])[:2] == (Mechanism.HARNESS, Claim.ENFORCED)
    assert held(planned["file_size"]) == (
        Mechanism.RLIMIT,
        Claim.ENFORCED,
        "RLIMIT_FSIZE: no file written larger",
    )
    assert held(planned["open_files"]) == (
        Mechanism.RLIMIT,
        Claim.ENFORCED,
        "per process (RLIMIT_NOFILE)",
    )
    assert rlimits(LIMITS, planned) == (("cpu", 30), ("fsize", 16 * G), ("nofile", 65536))


def test_v1_memory_is_enforced_only_when_swap_is_counted_or_absent():
    def memory(**host: object) -> tuple[Mechanism, Claim, str]:
        return held(plan(LIMITS, HostLimits(cgroup="v1", controllers=ALL, uid=0, **host))["memory"])

    assert memory(swap=True, memsw=True) == (
        Mechanism.CGROUP_V1,
        Claim.ENFORCED,
        "memory.limit_in_bytes and memory.memsw.limit_in_bytes (swap counted)",
    )
    assert memory(swap=False, memsw=False) == (
        Mechanism.CGROUP_V1,
        Claim.ENFORCED,
        "memory.limit_in_bytes (no swap configured)",
    )
    assert memory(swap=True, memsw=False) == (
        Mechanism.CGROUP_V1,
        Claim.PARTIAL,
        "memory.limit_in_bytes; swap is not counted",
    )
    v1 = plan(LIMITS, HostLimits(cgroup="v1", controllers=ALL, uid=0))
    assert v1["processes"].mechanism is Mechanism.CGROUP_V1


def test_without_a_cgroup_a_non_root_command_falls_back_to_rlimits():
    host = HostLimits(uid=1000, reason="no writable cgroup")
    planned = plan(LIMITS, host)
    # RLIMIT_NPROC would count the user's every process: not used, and said so.
    assert held(planned["processes"]) == (
        Mechanism.NONE,
        Claim.NONE,
        "no pids cgroup here, and RLIMIT_NPROC counts every process of uid 1000, "
        "not the command's: not used",
    )
    assert held(planned["memory"]) == (
        Mechanism.RLIMIT,
        Claim.PARTIAL,
        "RLIMIT_DATA: each process's private writable memory, not the command's "
        "resident memory as a whole",
    )
    assert held(planned["cpu_seconds"]) == (
        Mechanism.RLIMIT,
        Claim.PARTIAL,
        "RLIMIT_CPU counts each process alone",
    )
    assert rlimits(LIMITS, planned) == (
        ("data", 2 * G),
        ("cpu", 30),
        ("fsize", 16 * G),
        ("nofile", 65536),
    )


def test_root_gets_no_process_limit_without_a_pids_cgroup():
    planned = plan(LIMITS, HostLimits(uid=0))
    assert held(planned["processes"]) == (
        Mechanism.NONE,
        Claim.NONE,
        "RLIMIT_NPROC is never enforced for root",
    )
    assert [name for name, _ in rlimits(LIMITS, planned)] == ["data", "cpu", "fsize", "nofile"]


def test_a_cgroup_without_a_controller_falls_back_for_that_limit_only():
    planned = plan(LIMITS, HostLimits(cgroup="v1", controllers=frozenset({"memory"}), uid=1000))
    assert planned["memory"].mechanism is Mechanism.CGROUP_V1
    assert planned["processes"].mechanism is Mechanism.NONE
    assert planned["cpu_seconds"].mechanism is Mechanism.RLIMIT
    # Controllers named without a cgroup to use them count for nothing.
    assert plan(LIMITS, HostLimits(controllers=ALL, uid=1000))["memory"].mechanism is (
        Mechanism.RLIMIT
    )
    assert [name for name, _ in rlimits(LIMITS, planned)] == ["cpu", "fsize", "nofile"]


def test_unlimited_values_are_claimed_as_such_and_get_no_rlimit():
    unlimited = Limits(
        processes=None,
        memory=None,
        cpu_seconds=None,
        wall_seconds=None,
        output_bytes=None,
        file_size=None,
        open_files=None,
    )
    for host in (HostLimits(uid=1000), HostLimits(cgroup="v2", controllers=ALL, uid=0)):
        planned = plan(unlimited, host)
        assert {(e.mechanism, e.claim, e.value) for e in planned.values()} == {
            (Mechanism.NONE, Claim.UNLIMITED, None)
        }
        assert rlimits(unlimited, planned) == ()


def test_cpu_rounds_up_to_whole_seconds():
    planned = plan(LIMITS, HostLimits(uid=1000))
    for seconds, whole in ((0.1, 1), (30.0, 30), (30.5, 31)):
        limits = Limits(cpu_seconds=seconds, memory=None)
        assert dict(rlimits(limits, planned))["cpu"] == whole


def test_mechanism_and_claim_values():
    assert [m.value for m in Mechanism] == ["cgroup-v2", "cgroup-v1", "rlimit", "harness", "none"]
    assert [c.value for c in Claim] == ["enforced", "partial", "none", "unlimited"]
    assert Mechanism.RLIMIT == "rlimit"
