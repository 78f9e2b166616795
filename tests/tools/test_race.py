"""Race harness: a thread keeps swapping what a path component names (inside <-> outside)
while 500 writes run; no write ever lands outside, under openat2 and the fallback alike."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from stockade.tools.fs import edit_file, write_file
from stockade.vocab import ExecutionPolicy

from .conftest import TEMP_ROOTS, snapshot

WRITES = 500


@pytest.fixture
def busy_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter allows, so the flipper interleaves."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def flipping(flip: Callable[[int], None]) -> tuple[threading.Event, threading.Thread, list[int]]:
    stop = threading.Event()
    count = [0]

    def loop() -> None:
        while not stop.is_set():
            flip(count[0])
            count[0] += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return stop, thread, count


def swap_link(link: str, targets: tuple[str, str]) -> Callable[[int], None]:
    """Atomically repoint `link` (symlink a temp name, rename it over the link)."""
    staging = link + ".next"

    def flip(turn: int) -> None:
        os.symlink(targets[turn % 2], staging)
        os.replace(staging, link)

    return flip


def run_writes(
    write: Callable[[int], object], stop: threading.Event, thread: threading.Thread
) -> list[object]:
    try:
        return [write(index) for index in range(WRITES)]
    finally:
        stop.set()
        thread.join(5)


def assert_inside_only(results: list, outside: str, before: dict) -> None:
    assert snapshot(outside) == before, "a write landed outside the workspace"
    for result in results:
        assert result.denied or not result.is_error, result.text
    assert_raced(results)


def assert_raced(results: list) -> None:
    """Both outcomes happened, so the flips really interleaved with the writes."""
    assert any(result.denied for result in results)
    assert any(not result.is_error for result in results)


@pytest.mark.parametrize("form", ["absolute", "relative"])
def test_directory_link_flipped_during_writes(
    resolver: str, form: str, ww: ExecutionPolicy, ws: str, outside: str, busy_switching: None
) -> None:
    inside = os.path.join(ws, "inside")
    os.mkdir(inside)
    out = outside if form == "absolute" else os.path.relpath(outside, ws)
    link = os.path.join(ws, "flip")
    os.symlink("inside", link)
    before = snapshot(outside)
    stop, thread, flips = flipping(swap_link(link, ("inside", out)))
    results = run_writes(
        lambda index: write_file(ww, ws, "flip/file.txt", f"{index}\n", temp_roots=TEMP_ROOTS),
        stop,
        thread,
    )
    assert flips[0] > 0
    assert_inside_only(results, outside, before)
    assert sorted(os.listdir(inside)) in ([], ["file.txt"])  # no temp file left behind


def test_final_link_flipped_during_writes_and_edits(
    resolver: str, ww: ExecutionPolicy, ws: str, outside: str, busy_switching: None
) -> None:
    victim = os.path.join(outside, "victim.txt")
    with open(victim, "w") as handle:
        handle.write("old\n")
    with open(os.path.join(ws, "mine.txt"), "w") as handle:
        handle.write("old\n")
    link = os.path.join(ws, "flip.txt")
    os.symlink("mine.txt", link)
    before = snapshot(outside)
    stop, thread, _ = flipping(swap_link(link, ("mine.txt", victim)))

    def step(index: int) -> object:
        if index % 2:
            return edit_file(ww, ws, "flip.txt", "old", "OLD", temp_roots=TEMP_ROOTS)
        return write_file(ww, ws, "flip.txt", "old\n", temp_roots=TEMP_ROOTS)

    results = run_writes(step, stop, thread)
    assert snapshot(outside) == before
    assert_raced(results)
    for result in results:
        # an edit after a denied write finds "OLD" still there: 0 matches, an honest error
        assert result.denied or not result.is_error or result.replacements == 0, result.text
    assert_raced(results[::2])
    assert_raced(results[1::2])
    assert sorted(os.listdir(ws)) in (
        ["flip.txt", "mine.txt"],
        ["flip.txt", "flip.txt.next", "mine.txt"],
    )


def test_real_directory_swapped_for_an_outward_link(
    resolver: str, ww: ExecutionPolicy, ws: str, outside: str, busy_switching: None
) -> None:
    """The component is a real directory when looked at, then a link to outside."""
    real = os.path.join(ws, "d")
    parked = os.path.join(ws, "d.parked")
    link = os.path.join(ws, "d.link")
    os.mkdir(real)
    os.symlink(outside, link)
    before = snapshot(outside)

    def flip(turn: int) -> None:
        if turn % 2 == 0:
            os.rename(real, parked)
            os.rename(link, real)
        else:
            os.rename(real, link)
            os.rename(parked, real)

    stop, thread, flips = flipping(flip)
    results = run_writes(
        lambda index: write_file(ww, ws, "d/file.txt", f"{index}\n", temp_roots=TEMP_ROOTS),
        stop,
        thread,
    )
    assert flips[0] > 0
    assert snapshot(outside) == before
    assert_raced(results)
    for result in results:
        # a write may also meet the name mid-swap (gone, or changing type between two
        # looks of the fallback walk): an honest OS error then, and still never outside
        assert (
            result.denied
            or not result.is_error
            or result.os_error
            in (
                "ENOENT",
                "ENOTDIR",
            )
        ), result.text
