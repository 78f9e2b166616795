"""The one install line that adds an optional extra (`mcp`, `acp`, `postgres`, `bwrap`)
to *this* installation, for the messages that say an extra is missing (issue 38).

stockade is not on a package index, so `pip install 'stockade[mcp]'` names nothing.
What works depends on how this copy was installed:

- with pipx (`pipx_metadata.json` beside the venv): `pipx inject stockade REQ...`;
- from a clone (an editable install: the package lives under the clone's `src/`; or
  `pip install /path/to/clone`, recorded in `direct_url.json`): this environment's pip,
  `pip install [-e] '/path/to/clone[EXTRA]'`;
- otherwise (a wheel): this environment's pip, `pip install REQ...`, the extra's own
  requirements as the installed metadata lists them.

Called only on the error path: importlib.metadata is not imported on any fast path.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

DIST = "stockade"


def extra_requirements(extra: str) -> list[str]:
    """The extra's requirements, as the installed metadata lists them (`mcp<3,>=2.3`)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        listed = requires(DIST) or []
    except PackageNotFoundError:
        return []
    found = []
    for line in listed:
        requirement, _, marker = line.partition(";")
        if f'extra == "{extra}"' in marker.replace("'", '"'):
            found.append(requirement.strip())
    return found


def _clone_of_package() -> Path | None:
    """The clone this package is imported from (an editable install, or a source run):
    `<clone>/src/stockade/__init__.py` beside `<clone>/pyproject.toml`."""
    here = Path(__file__).resolve().parent
    if here.parent.name != "src":
        return None
    clone = here.parent.parent
    return clone if (clone / "pyproject.toml").is_file() else None


def _clone_installed_from() -> Path | None:
    """The local directory a non-editable `pip install /path/to/clone` named (PEP 610's
    direct_url.json), when it still holds the project."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        text = distribution(DIST).read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        url = urlparse(json.loads(text).get("url", ""))
    except (ValueError, AttributeError):
        return None
    if url.scheme != "file":
        return None
    clone = Path(unquote(url.path))
    return clone if (clone / "pyproject.toml").is_file() else None


def _pip() -> str:
    """This environment's pip, named by path: the `pip` on PATH may be another one."""
    if sys.prefix != sys.base_prefix:
        pip = Path(sys.prefix) / "bin" / "pip"
        if pip.exists():
            return shlex.quote(str(pip))
    return f"{shlex.quote(sys.executable)} -m pip"


def _under_pipx() -> bool:
    return (Path(sys.prefix) / "pipx_metadata.json").is_file()


def install_line(extra: str) -> str:
    """The command that adds `extra` to this installation, as one shell line."""
    requirements = " ".join(shlex.quote(r) for r in extra_requirements(extra))
    if _under_pipx() and requirements:
        return f"pipx inject {DIST} {requirements}"
    editable = _clone_of_package()
    if editable is not None:
        return f"{_pip()} install -e {shlex.quote(f'{editable}[{extra}]')}"
    clone = _clone_installed_from()
    if clone is not None:
        return f"{_pip()} install {shlex.quote(f'{clone}[{extra}]')}"
    if requirements:
        return f"{_pip()} install {requirements}"
    return f"{_pip()} install '/path/to/stockade-clone[{extra}]' (docs/packaging.md)"


def extra_hint(extra: str) -> str:
    """`install the EXTRA extra: LINE`, for a missing-extra message."""
    return f"install the {extra} extra: {install_line(extra)}"
