"""The sandbox and executor rooms' public surfaces: every name they promise resolves,
and importing a room costs nothing until a name is asked for (exec's fast path)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import stockade.executor
import stockade.sandbox


@pytest.mark.parametrize("room", [stockade.sandbox, stockade.executor], ids=lambda m: m.__name__)
def test_every_promised_name_resolves(room):
    for name in room.__all__:
        assert getattr(room, name) is not None, name
    with pytest.raises(AttributeError):
        _ = room.no_such_name


def test_importing_the_rooms_imports_none_of_their_modules():
    probe = (
        "import sys, stockade.sandbox, stockade.executor\n"
        "print(sorted(m for m in sys.modules if m.startswith(('stockade.sandbox.', "
        "'stockade.executor.')) or m in ('trio', 'attrs', 'msgspec', 'typing')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
