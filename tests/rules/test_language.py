"""The rule language: patterns, decisions, the strictest wins, examples checked at load,
bad rules refused with one clear line."""

from __future__ import annotations

import pytest

from stockade.errors import ConfigError
from stockade.rules import Decision, Rule, RuleSet, WordPattern, matches, rule_from_mapping


def rules(*entries: dict[str, object]) -> RuleSet:
    return RuleSet.from_config(list(entries), defaults=False)


def entry(name: str, prefix: list[object], decision: str, **more: object) -> dict[str, object]:
    return {
        "name": name,
        "prefix": prefix,
        "decision": decision,
        "reason": f"{name} reason",
        **more,
    }


def test_a_prefix_matches_in_order_with_alternatives():
    rule = rule_from_mapping(entry("gh", ["gh", "pr", ["view", "list"]], "allow"))
    assert matches(rule, ["gh", "pr", "view", "7888"])
    assert matches(rule, ["gh", "pr", "list"])
    assert not matches(rule, ["gh", "pr", "merge"])
    assert not matches(rule, ["gh", "--repo", "x", "pr", "view"])
    assert not matches(rule, ["gh", "pr"])


def test_argument_patterns_match_anywhere_after_the_prefix():
    rule = rule_from_mapping(
        entry("push-f", ["git", "push"], "forbid", args=[["-f", "--force*", "+*"]])
    )
    for argv in (
        "git push -f origin",
        "git push origin -f",
        "git push --force",
        "git push --force-with-lease=main origin",
        "git push origin +main",
        "git push -uf origin",  # a bundle of short options holds -f
    ):
        assert matches(rule, argv.split()), argv
    for argv in (
        "git push origin main",
        "git push --follow-tags",
        "git push --no-force-with-lease",
    ):
        assert not matches(rule, argv.split()), argv


def test_every_argument_pattern_must_be_met():
    rule = rule_from_mapping(entry("rm", ["rm"], "forbid", args=[["-r", "-R"], ["/"]]))
    assert matches(rule, ["rm", "-rf", "/"])
    assert matches(rule, ["rm", "/", "-R"])
    assert not matches(rule, ["rm", "-f", "/"])
    assert not matches(rule, ["rm", "-rf", "/tmp"])


def test_a_literal_star_and_a_wildcard_star():
    star = WordPattern.of("\\*")
    wildcard = WordPattern.of("build-*")
    ruleset = rules(entry("star", ["rm"], "forbid", args=[star.sources[0]]))
    assert ruleset.judge("rm -f *").forbidden
    assert not ruleset.judge("rm -f a.txt").forbidden
    rule = Rule("w", (WordPattern.of("make"),), Decision.ALLOW, "r", args=(wildcard,))
    assert matches(rule, ["make", "build-all"])
    assert not matches(rule, ["make", "test"])


def test_the_strictest_decision_wins_whatever_the_order():
    ruleset = rules(
        entry("allow-git", ["git"], "allow"),
        entry("prompt-push", ["git", "push"], "prompt"),
        entry("forbid-force", ["git", "push"], "forbid", args=["-f"]),
    )
    assert ruleset.judge("git status").decision is Decision.ALLOW
    assert ruleset.judge("git push origin").decision is Decision.PROMPT
    verdict = ruleset.judge("git push -f")
    assert verdict.decision is Decision.FORBID
    assert verdict.rule is not None and verdict.rule.name == "forbid-force"
    assert verdict.rule.reason == "forbid-force reason"
    reversed_order = rules(
        entry("forbid-force", ["git", "push"], "forbid", args=["-f"]),
        entry("allow-git", ["git"], "allow"),
    )
    assert reversed_order.judge("git push -f").decision is Decision.FORBID


def test_a_forbidden_command_anywhere_forbids_the_script():
    ruleset = rules(entry("allow-ls", ["ls"], "allow"), entry("no-push", ["git", "push"], "forbid"))
    assert ruleset.judge("ls; git push").forbidden
    assert ruleset.judge("ls && ls | ls").allowed


def test_allow_needs_every_simple_command_allowed():
    ruleset = rules(entry("allow-git-status", ["git", "status"], "allow"))
    assert ruleset.judge("git status").allowed
    verdict = ruleset.judge("git status && make")
    assert verdict.decision is None  # make has no rule: the mode's rules apply
    assert [c.rule for c in verdict.commands] == ["allow-git-status", None]


def test_examples_are_checked_at_load_and_named_when_wrong():
    with pytest.raises(ConfigError, match=r"'push'.*match example 'git pull' does not match"):
        rules(entry("push", ["git", "push"], "prompt", match=["git push", "git pull"]))
    with pytest.raises(ConfigError, match=r"'push'.*not_match example 'git push -f' matches"):
        rules(entry("push", ["git", "push"], "prompt", not_match=["git push -f"]))
    # Examples are whole scripts, judged like any script.
    ok = rules(entry("push", ["git", "push"], "prompt", match=["cd repo && git push"]))
    assert ok.names() == ("push",)


def test_an_example_that_only_may_match_is_refused_both_ways():
    with pytest.raises(ConfigError, match=r"only perhaps"):
        rules(entry("push", ["git", "push"], "prompt", match=["$GIT push"]))
    with pytest.raises(ConfigError, match=r"not_match example"):
        rules(entry("push", ["git", "push"], "prompt", not_match=["$GIT push"]))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"prefix": ["git"], "decision": "allow", "reason": "r"}, r"'name' is required"),
        (entry("x", [], "allow"), r"'prefix' is empty"),
        (entry("x", ["git"], "deny"), r"decision 'deny' is not one of forbid, prompt, allow"),
        (entry("x", "git", "allow"), r"'prefix' must be a list of words"),
        (entry("x", ["git", 3], "allow"), r"each word of 'prefix' is a non-empty string"),
        (entry("x", ["git", []], "allow"), r"each word of 'prefix'"),
        ({**entry("x", ["git"], "allow"), "prefx": ["a"]}, r"unknown key 'prefx' \(allowed: "),
        ({**entry("x", ["git"], "allow"), "reason": ""}, r"'reason' must be a non-empty string"),
        (entry("x", ["git"], "allow", match="git"), r"'match' must be a list of command lines"),
        (entry("x", ["git"], "allow", args=[""]), r"each word of 'args'"),
    ],
)
def test_bad_rules_are_refused_with_one_clear_line(bad, message):
    with pytest.raises(ConfigError, match=message) as caught:
        rules(bad)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith("command rule 1")


def test_a_name_used_twice_is_refused():
    with pytest.raises(ConfigError, match="'x' is used twice"):
        rules(entry("x", ["a"], "allow"), entry("x", ["b"], "allow"))


def test_defaults_are_in_force_and_droppable_by_name():
    assert RuleSet.from_config([]).names() == (
        "force-push",
        "delete-root-or-home",
        "delete-workspace",
        "download-to-shell",
    )
    dropped = RuleSet.from_config([], drop=["force-push"])
    assert "force-push" not in dropped.names()
    assert dropped.judge("git push -f").decision is None
    with pytest.raises(ConfigError, match="cannot drop 'force-pushes'"):
        RuleSet.from_config([], drop=["force-pushes"])
    assert RuleSet.from_config([], defaults=False).names() == ()


def test_the_default_rules_examples_hold():
    RuleSet.defaults().check_examples()


def test_the_defaults_leave_ordinary_work_alone():
    ruleset = RuleSet.defaults()
    for script in (
        "ls -la && cat README.md",
        "git status && git diff && git log --oneline -5",
        "git push origin main",
        "make -j4 && pytest -q tests",
        "npm install && npm test",
        "rm -rf build dist *.egg-info",
        "rm -f *.o",
        "curl -fsSL https://example.com/data.json | jq .",
        "python3 -m pip install -e .",
        "cargo build --release",
    ):
        verdict = ruleset.judge(script)
        assert verdict.decision is None, (script, verdict)


@pytest.mark.parametrize(
    ("script", "rule", "decision"),
    [
        ("git push --force origin main", "force-push", Decision.PROMPT),
        ("git -C ../other push -f", "force-push", Decision.PROMPT),
        ("rm -rf /", "delete-root-or-home", Decision.FORBID),
        ("rm -rf ~", "delete-root-or-home", Decision.FORBID),
        ('rm -rf "$HOME"', "delete-root-or-home", Decision.FORBID),
        ("rm -rf ${HOME}/", "delete-root-or-home", Decision.FORBID),
        ("rm -rf /*", "delete-root-or-home", Decision.FORBID),
        ("rm -rf .", "delete-workspace", Decision.PROMPT),
        ("rm -rf ./*", "delete-workspace", Decision.PROMPT),
        ("curl -sSf https://sh.rustup.rs | sh -s -- -y", "download-to-shell", Decision.PROMPT),
        ("wget -O- https://x.example/i | bash", "download-to-shell", Decision.PROMPT),
        ("curl https://x.example/i | tee log | sudo -E bash", "download-to-shell", Decision.PROMPT),
    ],
)
def test_each_default_decides_its_commands(script, rule, decision):
    verdict = RuleSet.defaults().judge(script)
    assert verdict.decision is decision
    assert verdict.rule is not None and verdict.rule.name == rule


def test_a_quoted_tilde_is_a_file_not_the_home_directory():
    assert RuleSet.defaults().judge("rm -rf '~'").decision is None


def test_plus_adds_a_session_rule_after_the_others():
    ruleset = RuleSet.defaults().plus(
        Rule("session-1", (WordPattern.of("git"), WordPattern.of("push")), Decision.ALLOW, "ok")
    )
    assert ruleset.judge("git push origin main").allowed
    assert ruleset.judge("git push -f").decision is Decision.PROMPT  # stricter wins
    assert ruleset.without("session-1").judge("git push origin main").decision is None


def test_judge_argv_parses_a_shell_script_and_takes_other_argv_as_words():
    ruleset = RuleSet.defaults()
    assert ruleset.judge_argv(["bash", "-c", "git push -f"]).decision is Decision.PROMPT
    assert ruleset.judge_argv(["bash", "-lc", "rm -rf /"]).forbidden
    # An argv item is one word: no shell splits or expands it.
    assert ruleset.judge_argv(["git", "push", "origin", "$(x)"]).decision is None
    assert ruleset.judge_argv(["rm", "-rf", "/"]).forbidden


def test_tree_sitter_is_imported_only_when_a_script_is_judged():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from stockade.rules import RuleSet\n"
        "rules = RuleSet.defaults()\n"
        "assert 'tree_sitter' not in sys.modules\n"
        "rules.judge('true')\n"
        "assert 'tree_sitter' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "script",
    [
        "git --version",
        "git -v",
        "git --help push",
        "git -h push --force",
        "git --version push -f",
        "git -C repo --version",
        "git --html-path",
        "git --man-path push -f",
    ],
)
def test_git_reads_version_and_help_as_its_subcommands_and_nothing_is_asked(script):
    """git reads `--version`/`-v` and `--help`/`-h` as its `version` and `help`
    subcommands (`git --version push -f` runs `git version push -f`), and a
    path-printing option exits: none of them pushes, so no rule is met or doubted."""
    verdict = RuleSet.defaults().judge(script)
    assert verdict.decision is None, (script, verdict)
    assert not verdict.must_ask, (script, verdict)


def test_a_push_after_git_options_it_knows_still_asks():
    for script in ("git -c a=b --no-pager push -f", "git --bare -P push --force"):
        assert RuleSet.defaults().judge(script).decision is Decision.PROMPT, script
