"""`broad_root_refusal`: the pure rule behind door 7 (a root of `/` or exactly the
caller's home, reached only as the current directory, is refused)."""

from __future__ import annotations

import pytest

from stockade.trust import broad_root_refusal

HOME = "/home/me"


@pytest.mark.parametrize("root", ["/", "//", "/.", HOME, f"{HOME}/", f"{HOME}/./"])
def test_slash_or_home_taken_implicitly_is_refused(root):
    why = broad_root_refusal(root, explicit=False, home=HOME)
    assert why is not None and "\n" not in why
    assert why.startswith("the workspace root would be ")
    assert "(the current directory)" in why and "run from a project directory" in why


@pytest.mark.parametrize("root", ["/", HOME])
def test_named_explicitly_it_is_accepted(root):
    assert broad_root_refusal(root, explicit=True, home=HOME) is None


@pytest.mark.parametrize(
    "root", [f"{HOME}/project", "/home", "/home/me2", "/srv", "/home/m", "/var/tmp"]
)
def test_other_roots_are_accepted(root):
    assert broad_root_refusal(root, explicit=False, home=HOME) is None


def test_the_message_names_what_the_root_is():
    assert "would be /, the whole disk" in broad_root_refusal("/", explicit=False, home=HOME)
    home = broad_root_refusal(HOME, explicit=False, home=HOME)
    assert f"would be {HOME}, your home directory" in home
    assert f"pass --root {HOME} to mean it" in home


@pytest.mark.parametrize("home", [None, "", "/"])
def test_no_home_or_a_home_of_slash_only_refuses_slash(home):
    assert broad_root_refusal("/srv", explicit=False, home=home) is None
    why = broad_root_refusal("/", explicit=False, home=home)
    assert why is not None and "/, the whole disk" in why
