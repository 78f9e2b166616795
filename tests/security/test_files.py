"""The escape battery, file effects: every route a command could take to change a file
outside its writable roots, through the executor, on bwrap AND Landlock, in read-only
and workspace-write, from a foreground call and from a background job.

The verdict is the host's state (support.Terrain.state: type, mode, owner, links,
size, mtime, ctime, content, xattrs, inode flags of every outside entry; in read-only
also the workspace), never the command's text alone. `test_controls.py` runs the
same commands unconfined and shows each one really changes that state.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from .support import ATTACK, MODES, RO, describe_change


@dataclass(frozen=True)
class FileAttack:
    id: str
    command: str
    modes: tuple = MODES
    # The refusal reaches stderr as the backend's denial text (EROFS / EACCES) in every mode.
    denied: bool = False
    # Needs a host process (not in the sandbox) whose cwd is outside and whose
    # stdout is the victim, opened for appending.
    host_process: bool = False
    # bwrap's private /dev is a tmpfs of its own: an effect there may succeed and
    # vanish with the sandbox; only the host's /dev is judged.
    private_dev: bool = False


# {V} victim, {O} outside dir, {W} workspace root (also the cwd), {B} base,
# {H} this terrain's tag for host residue, {A} attacks.py, {SP} the host process.
FILE_ATTACKS = (
    FileAttack(
        "absolute-path",
        "echo pwned > {V}; printf x >> {V}; echo new > {O}/new; mkdir {O}/newdir; "
        "cp {W}/inside.txt {O}/copied; {A} write {O}/sub/keep.txt",
        denied=True,
    ),
    FileAttack(
        "everyday-tools",
        "sed -i s/original/pwned/ {V}; cp --remove-destination inside.txt {V}; "
        "install -m 644 inside.txt {O}/installed; echo pwned | tee {V}; "
        "dd if=/dev/zero of={V} bs=1 count=1 conv=notrunc; {A} opath-reopen {V} "
        "-- opath-reopen {W}/file-link",
        denied=True,
    ),
    FileAttack(
        "dotdot",
        "echo pwned > ../outside/victim.txt; echo new > ../outside/new; "
        "(cd insidedir && echo x > ../../outside/deep); mkdir ../outside/newdir; "
        "echo y > {W}/../outside/new2",
        denied=True,
    ),
    FileAttack(
        "symlink-file",
        "echo pwned > file-link; echo pwned >> rel-link; cp inside.txt file-link; "
        "{A} write {W}/file-link -- write {W}/rel-link -- truncate {W}/file-link",
        denied=True,
    ),
    FileAttack(
        "symlink-dir",
        "echo new > dir-link/new; echo pwned > dir-link/victim.txt; mkdir dir-link/newdir; "
        "rm -f dir-link/sub/keep.txt; mv inside.txt dir-link/moved; {A} write {W}/dir-link/new2",
        denied=True,
    ),
    FileAttack(
        "symlink-made-inside",
        "ln -s {O} made-dir; echo new > made-dir/new; ln -s {V} made-file; echo pwned > made-file; "
        "ln -s ../outside made-rel; echo new > made-rel/new2; "
        "ln -sfn {O} insidedir/swap; echo x > insidedir/swap/new3",
        denied=True,
    ),
    FileAttack(
        "symlink-in-temp-root",
        "echo new > /tmp/{H}-link/new; echo pwned > /tmp/{H}-link/victim.txt; "
        "echo pwned > /tmp/{H}-flink; {A} write /tmp/{H}-flink -- write /tmp/{H}-link/new2",
        denied=True,
    ),
    FileAttack(
        "hard-link",
        "ln {V} {W}/hl && echo pwned >> {W}/hl; ln {V} /tmp/{H}-hl && echo pwned >> /tmp/{H}-hl; "
        "ln {O}/sub/keep.txt insidedir/hl2; {A} link {V} {W}/hl3 -- link {O}/sub/keep.txt /tmp/{H}-hl4",
    ),
    FileAttack(
        "rename-out",
        "mv inside.txt {O}/moved; mv insidedir {O}/; {A} rename {W}/inside.txt {V} "
        "-- rename {W}/insidedir {O}/empty -- exchange {W}/inside.txt {V}",
    ),
    FileAttack(
        "rename-in",
        "mv {V} {W}/stolen; mv {O}/sub {W}/; {A} rename {V} {W}/stolen2 "
        "-- rename {O}/empty {W}/e -- exchange {V} {W}/inside.txt",
    ),
    FileAttack(
        "remove",
        "rm -f {V}; rm -rf {O}/sub; rmdir {O}/empty; unlink {O}/proj/victim.txt",
    ),
    FileAttack(
        "proc-self-root",
        "echo pwned > /proc/self/root{V}; echo new > /proc/$$/root{O}/new; "
        "echo x > /proc/self/cwd/../outside/new2; (cd /proc/self/root{O} && echo y > new3); "
        "{A} write /proc/self/root{V}",
        denied=True,
    ),
    FileAttack(
        # /proc/1 is the sandbox's own init under bwrap, the host's under Landlock (where
        # it may be refused even to an unconfined root: the control uses $PPID, the
        # executor's process under Landlock, bwrap's init under bwrap).
        "proc-pid-root",
        "echo pwned > /proc/1/root{V}; echo new > /proc/1/root{O}/new; mkdir /proc/1/root{O}/d; "
        "echo pwned > /proc/$PPID/root{V}; echo new > /proc/$PPID/root{O}/new2; "
        "{A} write /proc/1/root{V} -- write /proc/$PPID/root{V}",
    ),
    FileAttack(
        "host-process-links",
        "echo pwned > /proc/{SP}/cwd/victim.txt; echo pwned > /proc/{SP}/fd/1; "
        "echo new > /proc/{SP}/root{O}/new; {A} write /proc/{SP}/fd/1 -- open-mem {SP} -- ptrace {SP}",
        host_process=True,
    ),
    FileAttack(
        "truncate",
        "truncate -s0 {V}; : > {V}; truncate -s 1M {O}/sub/keep.txt; {A} truncate {V}",
        denied=True,
    ),
    FileAttack(
        "special-files",
        "mkfifo {O}/fifo; mknod {O}/cdev c 1 3; mknod {O}/bdev b 7 0; "
        "{A} bind-socket {O}/sock -- mkfifo {O}/fifo2",
    ),
    FileAttack(
        "tmpfile-then-link",
        "{A} tmpfile {O} {O}/linked -- tmpfile {W} {O}/linked2",
    ),
    FileAttack(
        "coredump-in-outside-cwd",
        "ulimit -c unlimited; cd {O} && bash -c 'kill -SEGV $$'; cd {O}/sub && bash -c 'kill -ABRT $$'",
    ),
    FileAttack(
        "the-root-itself",
        "cd / && mv {W} {W}.moved; mv {W} {O}/; rmdir {W}; {A} rename {W} {B}/ws2 -- exchange {W} {O}",
    ),
    FileAttack(
        "dev-shm",
        "echo x > /dev/shm/{H}-f; mkdir /dev/shm/{H}-d; {A} bind-socket /dev/shm/{H}-s",
        private_dev=True,
    ),
    FileAttack(
        "host-dev",
        "mknod /dev/{H}-c c 1 3; echo x > /dev/{H}-f; ln -s /etc /dev/{H}-l; mkdir /dev/{H}-d",
        private_dev=True,
    ),
    FileAttack(
        "temp-root-in-read-only",
        "echo x > /tmp/{H}-f; mkdir /tmp/{H}-d; ln -s / /tmp/{H}-l; {A} mkfifo /tmp/{H}-p",
        modes=(RO,),
        denied=True,
    ),
    FileAttack(
        "workspace-in-read-only",
        "echo x > new; echo pwned > inside.txt; rm insidedir/f; mkdir d; mv inside.txt moved; "
        "ln -s x l; truncate -s0 inside.txt",
        modes=(RO,),
        denied=True,
    ),
)


def fill(template: str, terrain, **extra) -> str:
    return template.format(
        V=terrain.victim,
        O=terrain.outside,
        W=terrain.root,
        B=terrain.base,
        H=terrain.host_name("").rstrip("-"),
        A=ATTACK,
        **extra,
    )


def prepare(terrain) -> None:
    """Host residue some attacks aim through: links in /tmp pointing outside."""
    Path("/tmp", terrain.host_name("link")).symlink_to(terrain.outside)
    Path("/tmp", terrain.host_name("flink")).symlink_to(terrain.victim)


def start_host_process(terrain) -> subprocess.Popen:
    with open(terrain.victim, "ab") as victim:
        return subprocess.Popen(["sleep", "30"], cwd=terrain.outside, stdout=victim)


def residue_beyond_temp(terrain, mode) -> list[str]:
    """Tagged host paths the mode forbids: all of them, in either mode (workspace-write
    writes the call's private temp directory, never the host's /tmp)."""
    return sorted(terrain.residue())


CASES = [
    pytest.param(attack, mode, via, id=f"{attack.id}-{mode.value}-{via}")
    for attack in FILE_ATTACKS
    for mode in attack.modes
    for via in ("run", "job")
]


@pytest.mark.parametrize(("attack", "mode", "via"), CASES)
async def test_file_effect_outside_the_roots_is_refused(sandbox, attack, mode, via):
    terrain = sandbox.terrain
    prepare(terrain)
    host = start_host_process(terrain) if attack.host_process else None
    try:
        before = terrain.state(with_root=mode is RO)
        residue_before = residue_beyond_temp(terrain, mode)
        command = fill(attack.command, terrain, SP=host.pid if host else "")
        with sandbox.battery.attempt(f"{attack.id} ({mode.value}, {via})"):
            result = await sandbox.run(command, mode, via=via)
            after = terrain.state(with_root=mode is RO)
            assert after == before, (
                f"{attack.id} changed the host under {mode.value}:\n"
                f"{describe_change(before, after)}\n{result.stdout}{result.stderr}"
            )
            assert residue_beyond_temp(terrain, mode) == residue_before, result.stderr
            if not attack.private_dev:
                assert ": DONE" not in result.stdout, result.stdout
            if attack.denied:
                assert result.denied, result.stderr
            if host is not None:
                assert host.poll() is None, "the host process was disturbed"
    finally:
        if host is not None:
            host.kill()
            host.wait()
