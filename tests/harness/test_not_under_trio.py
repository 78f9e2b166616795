"""An asyncio host that opens the harness under a plain `asyncio.run` (issue 38, item
2): one error naming trio-asyncio and the docs' section, raised before anything
starts, instead of Trio's AttributeError from deep inside it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


HOST = """
import asyncio, sys
from stockade import open_harness
from stockade.errors import NotUnderTrio, StockadeError

opened = []

async def host():
    async with open_harness(cwd=sys.argv[1]) as harness:
        opened.append(harness)

try:
    asyncio.run(host())
except NotUnderTrio as error:
    assert opened == [] and isinstance(error, StockadeError | RuntimeError)
    print(str(error))
    sys.exit(3)
"""


def test_open_harness_under_plain_asyncio_says_to_use_trio_asyncio(scratch):
    # A process of its own: a plain asyncio host, with no event loop any earlier test
    # of this process may have left set.
    done = subprocess.run(
        [sys.executable, "-c", HOST, str(scratch)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stdout + done.stderr
    said = done.stdout.strip()
    assert "\n" not in said and "Traceback" not in done.stderr
    assert "trio-asyncio" in said and "docs/embedding.md, 'asyncio hosts'" in said
    # The section it names exists.
    assert re.search(r"^## asyncio hosts$", (REPO / "docs/embedding.md").read_text(), re.M)
