"""The check every workflow ends with finds what it must: an unconfined write to the
host's caches or home fails it; stockade's own directories and the workspace do not."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from .support import new_place


@pytest.mark.parametrize(
    "write",
    [
        "mkdir -p ~/.cache/pip/http && touch ~/.cache/pip/http/entry",
        "mkdir -p ~/.npm/_cacache",
        "mkdir -p ~/.cargo/registry",
        "mkdir -p ~/go/pkg/mod",
        "git config --global core.editor vi",
        "touch ~/.bash_history",
    ],
)
def test_the_control_a_write_to_the_home_fails_the_check(write):
    place = new_place("root")
    try:
        place.hand_over()
        subprocess.run(
            ["bash", "-c", write],
            env={"HOME": str(place.home), "PATH": "/usr/bin:/bin"},
            check=True,
        )
        with pytest.raises(AssertionError, match="home changed"):
            place.assert_home_untouched()
    finally:
        shutil.rmtree(place.base, ignore_errors=True)


def test_the_workspace_and_stockades_own_directories_pass_it():
    place = new_place("root")
    try:
        place.hand_over()
        for made in (
            place.root / "build",
            place.caches / "pip" / "x",
            place.home / ".local/state/stockade/s",
        ):
            made.mkdir(parents=True)
        place.assert_home_untouched()
    finally:
        shutil.rmtree(place.base, ignore_errors=True)
