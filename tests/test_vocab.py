import pytest

from stockade import errors
from stockade.vocab import (
    ApprovalPolicy,
    ExecutionPolicy,
    SandboxMode,
    SandboxPolicy,
    allowed_modes,
    denial_marker,
    rejection_text,
)


def test_modes_are_ordered_read_only_workspace_write_danger():
    ro, ww, dfa = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS
    assert ro < ww < dfa
    assert sorted([dfa, ro, ww]) == [ro, ww, dfa]
    assert ww.is_wider_than(ro) and dfa.is_wider_than(ww)
    assert not ro.is_wider_than(ro) and not ro.is_wider_than(ww)
    assert [m.rank for m in (ro, ww, dfa)] == [0, 1, 2]
    assert ro.confines and ww.confines and not dfa.confines


def test_unknown_mode_lists_the_allowed_values():
    with pytest.raises(errors.ConfigError) as caught:
        SandboxMode.parse("write-everything")
    message = str(caught.value)
    assert "write-everything" in message
    for allowed in allowed_modes():
        assert allowed in message
    assert SandboxMode.parse("read-only") is SandboxMode.READ_ONLY


def test_unknown_approval_policy_is_rejected():
    with pytest.raises(errors.ConfigError, match="allowed: ask, never"):
        ApprovalPolicy.parse("sometimes")


def test_policies_require_absolute_roots_and_backends_never_see_danger():
    with pytest.raises(errors.InvalidPolicy):
        ExecutionPolicy(mode=SandboxMode.READ_ONLY, workspace_root="relative/dir")
    with pytest.raises(errors.InvalidPolicy, match="never reaches a sandbox backend"):
        SandboxPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root="/w")
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root="/w")
    assert policy.sandbox_policy() == SandboxPolicy(SandboxMode.WORKSPACE_WRITE, "/w")


def test_sandbox_unavailable_carries_code_and_detail():
    error = errors.SandboxUnavailable("no backend")
    assert error.code == "SANDBOX_UNAVAILABLE"
    assert error.detail == "no backend"
    assert "SANDBOX_UNAVAILABLE" in str(error)


def test_fixed_texts():
    assert (
        denial_marker(SandboxMode.READ_ONLY) == "[sandbox: file access denied under read-only mode]"
    )
    assert rejection_text(SandboxMode.WORKSPACE_WRITE) == (
        'the user rejected escalating this command to "workspace-write"'
    )
