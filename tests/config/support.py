"""Helpers for the composition tests: write a stockade.yml, load it, collect its error lines."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stockade.config import Composition, load_composition
from stockade.errors import ConfigError

ENV = {"HOME": "/home/tester"}

# The sandboxed product path without the optional entries, for tests that add one mistake.
SANDBOXED = """\
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
- id: approval
  name: stockade.approval.user
"""


def write(directory: Path, text: str, name: str = "stockade.yml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(directory: Path, text: str, **kwargs: object) -> Composition:
    write(directory, text)
    kwargs.setdefault("environ", ENV)
    return load_composition("stockade.yml", cwd=directory, **kwargs)


def errors(directory: Path, text: str, **kwargs: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(directory, text, **kwargs)
    return str(info.value).splitlines()
