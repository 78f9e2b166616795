"""The model's policy message names the command rules that forbid and those that ask, with
their reasons (issue 40): the rules in force, the composition's and the defaults."""

from __future__ import annotations

from stockade import open_harness

from .conftest import composition

NO_DEPLOY = {
    "name": "no-deploy",
    "prefix": ["make", "deploy"],
    "decision": "forbid",
    "reason": "deploys go through CI",
}
ASK_PUBLISH = {
    "name": "ask-publish",
    "prefix": ["npm", "publish"],
    "decision": "prompt",
    "reason": "a release is the maintainer's call",
}
ALLOW_LS = {"name": "ok-ls", "prefix": ["ls"], "decision": "allow", "reason": "reading is fine"}


async def told(entries: list[dict], root) -> str:
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=root)
        message = await session.pre_step()
        await session.close()
    assert message is not None
    return message.text


async def test_the_message_names_the_forbidden_and_prompting_rules(state_dir, projects):
    root, _ = projects
    rules = [NO_DEPLOY, ASK_PUBLISH, ALLOW_LS]
    text = await told(composition(state_dir, rules=rules), root)
    refused, _, asking = text.partition("Commands that wait for the person's approval:")
    assert "Commands that are refused (nothing runs):" in refused
    assert "- `make deploy` (no-deploy): deploys go through CI" in refused
    assert "- `npm publish` (ask-publish): a release is the maintainer's call" in asking
    # The defaults are in force too; an allow rule is no news to the model.
    assert "(delete-root-or-home)" in refused and "(force-push)" in asking
    assert "ok-ls" not in text


async def test_without_rules_that_forbid_or_ask_the_message_has_none(state_dir, projects):
    root, _ = projects
    text = await told(composition(state_dir, rules={"defaults": False, "rules": [ALLOW_LS]}), root)
    assert "Command rules" not in text and "ok-ls" not in text
