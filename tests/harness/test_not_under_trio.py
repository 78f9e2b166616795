"""An asyncio host that opens the harness under a plain `asyncio.run` (issue 38, item
2): one error naming trio-asyncio and the docs' section, raised before anything
starts, instead of Trio's AttributeError from deep inside it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.errors import NotUnderTrio, StockadeError

REPO = Path(__file__).resolve().parents[2]


def test_open_harness_under_plain_asyncio_says_to_use_trio_asyncio(scratch):
    opened = []

    async def host() -> None:
        async with open_harness(cwd=scratch) as harness:
            opened.append(harness)

    with pytest.raises(NotUnderTrio) as refused:
        asyncio.run(host())
    assert opened == []
    assert isinstance(refused.value, StockadeError | RuntimeError)
    said = str(refused.value)
    assert "\n" not in said
    assert "trio-asyncio" in said and "docs/embedding.md, 'asyncio hosts'" in said
    # The section it names exists.
    assert re.search(r"^## asyncio hosts$", (REPO / "docs/embedding.md").read_text(), re.M)
