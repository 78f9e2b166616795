"""Entry names resolve through `stockade.plugins` entry points, or an injected table."""

from __future__ import annotations

import sys
import textwrap

import attrs
import pytest

from stockade.config import (
    BUILTIN_PLUGINS,
    ENTRY_POINT_GROUP,
    Plugin,
    PluginTable,
    default_plugins,
    load_composition,
)
from stockade.config.builtins import SANDBOX_LOCAL
from stockade.errors import ConfigError

from .support import errors, load

MODULE = "stockade_acme_test_plugin"

PLUGIN_SOURCE = """
import attrs
from stockade.config import Plugin
from stockade.config.types import PositiveInt


@attrs.frozen(kw_only=True)
class FakeConfig:
    jail: str = "chroot"
    depth: PositiveInt = 1


class FakeActor:
    def __init__(self, config):
        self.config = config
        self.client = object()

    async def run(self, *, task_status=None):
        pass


PLUGIN = Plugin(name="acme.sandbox.fake", kind="sandbox", config_type=FakeConfig, factory=FakeActor)
NOT_A_PLUGIN = "just a string"
"""


@pytest.fixture
def distribution(tmp_path, monkeypatch):
    """A distribution on sys.path whose entry points add plugins, as `pip install` would."""
    site = tmp_path / "site"
    dist_info = site / "acme_stockade_plugin-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-stockade-plugin\nVersion: 1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(
        textwrap.dedent(
            f"""\
            [{ENTRY_POINT_GROUP}]
            acme.sandbox.fake = {MODULE}:PLUGIN
            acme.broken = {MODULE}_missing:PLUGIN
            acme.wrong = {MODULE}:NOT_A_PLUGIN
            """
        )
    )
    (site / f"{MODULE}.py").write_text(PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop(MODULE, None)


def test_a_third_party_plugin_resolves_through_its_entry_point(tmp_path, distribution):
    text = (
        "- id: sandbox\n  name: acme.sandbox.fake\n  config: {jail: nspawn}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
    )
    composition = load(tmp_path, text)  # the default lookup: entry points
    provider = composition.provider
    assert provider.name == "acme.sandbox.fake"
    assert provider.config.jail == "nspawn"
    assert type(provider.config).__module__ == MODULE
    actor = provider.plugin.factory(provider.config)
    assert actor.config is provider.config
    assert composition.confines  # a third-party sandbox satisfies the confining executor


def test_a_third_party_config_gets_the_same_checks(tmp_path, distribution):
    text = "- id: sandbox\n  name: acme.sandbox.fake\n  config: {depth: 0, size: 3}\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:3:19: config.depth: must be a positive integer, got 0",
        "stockade.yml:3:22: unknown key 'size' (allowed: jail, depth)",
    ]


def test_entry_point_names_are_listed_as_known(tmp_path, distribution):
    (line,) = errors(tmp_path, "- id: x\n  name: acme.nope\n")
    assert "acme.sandbox.fake" in line
    assert "stockade.bash.local" in line


def test_a_plugin_that_fails_to_import_is_an_error_at_its_entry(tmp_path, distribution):
    (line,) = errors(tmp_path, "- id: x\n  name: acme.broken\n")
    assert line.startswith(
        f"stockade.yml:2:9: plugin 'acme.broken' ({MODULE}_missing:PLUGIN) failed to load: "
        "ModuleNotFoundError"
    )


def test_an_entry_point_that_is_not_a_plugin(tmp_path, distribution):
    assert errors(tmp_path, "- id: x\n  name: acme.wrong\n") == [
        f"stockade.yml:2:9: plugin 'acme.wrong' ({MODULE}:NOT_A_PLUGIN) is a str, not a Plugin"
    ]


def test_an_unused_broken_plugin_does_not_break_a_load(tmp_path, distribution):
    assert load(tmp_path, "- id: b\n  name: stockade.bash.local\n").executor is not None


def test_default_lookup_includes_every_builtin_without_installed_metadata():
    table = default_plugins(points=())
    assert dict(table) == dict(BUILTIN_PLUGINS)


def test_an_entry_point_overrides_a_builtin_of_the_same_name():
    from importlib.metadata import EntryPoint

    point = EntryPoint(
        name="stockade.sandbox.local", value="stockade.config.builtins:FS_LOCAL", group="g"
    )
    table = PluginTable(BUILTIN_PLUGINS, [point])
    assert table["stockade.sandbox.local"].name == "stockade.fs.local"
    assert len(table) == len(BUILTIN_PLUGINS)


def test_the_same_registration_twice_is_one_but_two_different_ones_conflict():
    from importlib.metadata import EntryPoint

    same = EntryPoint(name="p", value="stockade.config.builtins:FS_LOCAL", group="g")
    other = EntryPoint(name="p", value="stockade.config.builtins:FS_SANDBOX", group="g")
    assert PluginTable({}, [same, same])["p"].name == "stockade.fs.local"
    with pytest.raises(ConfigError, match="registered more than once"):
        PluginTable({}, [same, other])["p"]


def test_an_injected_table_replaces_the_lookup(tmp_path):
    @attrs.frozen
    class Empty:
        pass

    plugins = {
        "my.shell": Plugin(name="my.shell", kind="executor", config_type=Empty),
        "stockade.sandbox.local": SANDBOX_LOCAL,
    }
    composition = load_composition([{"id": "sh", "name": "my.shell"}], plugins=plugins)
    assert composition.executor.name == "my.shell"
    assert not composition.confines
    with pytest.raises(ConfigError, match=r"allowed: my\.shell, stockade\.sandbox\.local\)$"):
        load_composition([{"id": "sh", "name": "stockade.bash.local"}], plugins=plugins)


def test_a_table_entry_under_another_name_is_refused():
    with pytest.raises(ConfigError, match="'alias' resolves to a plugin named"):
        load_composition([{"id": "s", "name": "alias"}], plugins={"alias": SANDBOX_LOCAL})


def test_plugin_descriptor_checks_itself():
    @attrs.frozen
    class Empty:
        pass

    with pytest.raises(ConfigError, match=r"unknown plugin kind 'shell' \(allowed: sandbox,"):
        Plugin(name="x", kind="shell", config_type=Empty)
    with pytest.raises(ConfigError, match="must be an attrs class"):
        Plugin(name="x", kind="fs", config_type=dict)
    with pytest.raises(ConfigError, match="only executor and fs plugins confine"):
        Plugin(name="x", kind="approval", config_type=Empty, confines=True)


def test_a_third_party_validator_error_points_at_the_config(tmp_path):
    def _odd(_instance, attribute, value):
        if value % 2 == 0:
            raise ValueError(f"{attribute.name} must be odd")

    @attrs.frozen
    class Odd:
        n: int = attrs.field(default=1, validator=_odd)

    plugins = {"odd": Plugin(name="odd", kind="log", config_type=Odd)}
    with pytest.raises(ConfigError) as info:
        load_composition([{"id": "o", "name": "odd", "config": {"n": 2}}], plugins=plugins)
    assert str(info.value) == "<mapping>:entry[0].config: ValueError: n must be odd"


# The table the project's pyproject.toml registers; kept here so a rename fails a test.
PYPROJECT_TABLE = """\
[project.entry-points."stockade.plugins"]
"stockade.sandbox.local" = "stockade.config.builtins:SANDBOX_LOCAL"
"stockade.bash.sandbox" = "stockade.config.builtins:BASH_SANDBOX"
"stockade.bash.local" = "stockade.config.builtins:BASH_LOCAL"
"stockade.approval.user" = "stockade.config.builtins:APPROVAL_USER"
"stockade.permission.presets" = "stockade.config.builtins:PERMISSION_PRESETS"
"stockade.session.log" = "stockade.config.builtins:SESSION_LOG"
"stockade.fs.sandbox" = "stockade.config.builtins:FS_SANDBOX"
"stockade.fs.local" = "stockade.config.builtins:FS_LOCAL"
"stockade.mcp" = "stockade.config.builtins:MCP_FACE"
"""


def test_the_registered_builtins_are_the_builtin_table():
    import tomllib
    from importlib.metadata import EntryPoint

    table = tomllib.loads(PYPROJECT_TABLE)["project"]["entry-points"][ENTRY_POINT_GROUP]
    points = [EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in table.items()]
    assert {point.name: point.load() for point in points} == dict(BUILTIN_PLUGINS)
    registered = PluginTable(BUILTIN_PLUGINS, points)
    assert {name: registered[name] for name in registered} == dict(BUILTIN_PLUGINS)


def test_installed_registrations_of_builtin_names_are_the_builtins():
    # Before the table is installed this checks nothing; after, it checks the install.
    table = default_plugins()
    for name, plugin in BUILTIN_PLUGINS.items():
        assert table[name] is plugin
