"""Fixtures for the hostile-input tests: the same projects and state directories as
the fault tests (siblings in one scratch directory outside every host temp root)."""

from ..faults.conftest import base as base
from ..faults.conftest import project as project
from ..faults.conftest import state_dir as state_dir
