"""The workflows' fixtures: each backend as root and as nobody, and a fresh home."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from .support import IDS, PARAMS, Place, Workflows, new_place, workflows_for


@pytest.fixture(params=PARAMS, ids=IDS)
def wf(request: pytest.FixtureRequest, nobody_public) -> Workflows:
    """Workflows on one real backend as one user (skipped locally, FAILED in CI, when
    the backend is unusable; as nobody only under a root caller)."""
    backend, who = request.param
    return workflows_for(backend, who, nobody_public)


@pytest.fixture
def place(wf: Workflows) -> Iterator[Place]:
    made = new_place(wf.who)
    try:
        yield made
    finally:
        shutil.rmtree(made.base, ignore_errors=True)
