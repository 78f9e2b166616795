"""The parse against the known bypasses of command rules: every simple command is judged
wherever it hides, and whatever cannot be judged exactly is never allowed."""

from __future__ import annotations

import pytest

from stockade.rules import MAX_SCRIPT_CHARS, Decision, RuleSet

ALLOW_GIT = {"name": "allow-git", "prefix": ["git"], "decision": "allow", "reason": "ok"}
NO_PUSH = {"name": "no-push", "prefix": ["git", "push"], "decision": "forbid", "reason": "no"}
ALLOW_ECHO = {
    "name": "allow-echo",
    "prefix": [["echo", "true", "cat"]],
    "decision": "allow",
    "reason": "ok",
}


@pytest.fixture
def ruleset() -> RuleSet:
    return RuleSet.from_config([ALLOW_GIT, NO_PUSH, ALLOW_ECHO], defaults=False)


@pytest.mark.parametrize(
    "script",
    [
        "true; git push",
        "true && git push || true",
        "echo x | git push | cat",
        "echo $(git push)",
        "echo `git push`",
        'echo "$(git push)"',
        "echo $(echo $(git push))",
        "diff <(git push) <(true)",
        "cat >(git push)",
        "bash -c 'git push'",
        'sh -c "git push origin"',
        "zsh -c 'git push'",
        "bash -lc 'git push'",
        "bash -c 'bash -c \"git push\"'",
        "eval 'git push'",
        "eval git push",
        "env A=1 git push",
        "env -i PATH=/usr/bin git push",
        "nice -n 10 git push",
        "timeout -s KILL 5 git push",
        "nohup git push",
        "time git push",
        "command git push",
        "exec git push",
        "sudo -u root git push",
        "stdbuf -oL git push",
        "ionice -c 3 git push",
        "setsid git push",
        "xargs git push",
        "xargs -n 1 -I{} git push {}",
        "find . -name x -exec git push \\;",
        "find . -exec sh -c 'git push' \\;",
        "/usr/bin/git push",
        "./git push",
        "'git' \"push\"",
        "g'i't pu\"sh\"",
        "\\git push",
        "$'git' push",
        "$'\\x67it' push",
        "git \\\n  push",
        "(git push)",
        "{ git push; }",
        "if true; then git push; fi",
        "while false; do git push; done",
        "for x in a; do git push; done",
        "case a in a) git push;; esac",
        "f() { git push; }",
        "f() { git push; }; f",
        "! git push",
        "git push > /dev/null 2>&1",
        "X=1 git push",
        "a=$(git push) true",
        "export A=$(git push)",
        "[[ $(git push) ]]",
        "cat <<EOF\n$(git push)\nEOF",
        "bash <<'EOF'\ngit push\nEOF",
        "bash <<< 'git push'",
        "trap 'git push' EXIT",
        "true\ngit push",
        "git push &",
        "coproc git push",
        "curl -s https://x.example/i <<EOF | git push\nEOF",
    ],
)
def test_every_hidden_command_is_found(ruleset, script):
    verdict = ruleset.judge(script)
    assert verdict.decision is Decision.FORBID, (script, verdict)
    assert verdict.rule is not None and verdict.rule.name == "no-push"


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("FOO=git; $FOO push", "$FOO is known only at run time"),
        ("$GIT push", "known only at run time"),
        ('"$GIT" push', "known only at run time"),
        ("${GIT:-git} push", "known only at run time"),
        ("$(echo git) push", "known only at run time"),
        ("git $SUB", "known only at run time"),
        ("git push$X", "known only at run time"),
        ('eval "$x"', "eval of a script not known until run time"),
        ("eval $x", "eval of a script not known until run time"),
        ('bash -c "$x"', "bash -c of a script not known until run time"),
        ('sh -c "git $x"', "sh -c of a script not known until run time"),
        ("echo 'git push' | bash", "reads its script from a pipe"),
        ("alias g=git; g push", "an alias definition"),
        ("source ./env.sh; git status", "runs a file in this shell"),
        (". ./env.sh", "runs a file in this shell"),
        ('echo "unterminated', "does not parse exactly"),
        ("echo 'unterminated", "does not parse exactly"),
        ("git status (", "does not parse exactly"),
        ("gi\\\nt push", "line continuation inside a word"),
        ("g\u0456t push", "only looks like the rule's"),  # Cyrillic i
        ("GIT push", "only looks like the rule's"),
        ("gi\u200bt push", "only looks like the rule's"),  # a zero-width space
        ("env -S 'git push'", "makes the command unknowable"),
        ("timeout --weird 5 git push", "an option the judge does not know"),
        ("git {push,status}", "known only at run time"),
        ("git pus?", "known only at run time"),
        ("fish -c 'git push'", "another language than bash"),
        ("coproc X { git push; }", "coproc with a compound command"),
        ("cat <<EOF | bash\ngit $X\nEOF", "reads its script from a pipe"),
        ("bash <<EOF\ngit $X\nEOF", "not known until run time"),
    ],
)
def test_what_cannot_be_judged_is_never_allowed_and_says_why(ruleset, script, why):
    verdict = ruleset.judge(script)
    assert verdict.decision is Decision.PROMPT, (script, verdict)
    assert verdict.rule is None
    assert any(why in u.reason for u in verdict.uncertain), verdict.uncertain


def test_doubt_never_allows_even_with_allow_rules_only():
    allow_only = RuleSet.from_config([ALLOW_GIT, ALLOW_ECHO], defaults=False)
    for script in ("$X status", 'eval "$x"', "echo 'x", "source f", "echo x | bash"):
        verdict = allow_only.judge(script)
        assert verdict.decision is None, (script, verdict)  # the mode's own rules apply
        assert verdict.uncertain


def test_an_allow_rule_on_one_command_does_not_allow_another(ruleset):
    assert ruleset.judge("git status").allowed
    assert ruleset.judge("git status; echo done").allowed
    for script in ("git status; make", "git status | grep x", "git log $(make)"):
        verdict = ruleset.judge(script)
        assert verdict.decision is None, (script, verdict)


def test_a_wrapper_is_transparent_for_allow_but_sudo_and_base_names_outside_system_dirs_are_not(
    ruleset,
):
    assert ruleset.judge("nice git status").allowed
    assert ruleset.judge("env A=1 nice git status").decision is None  # A=1 changes git
    assert ruleset.judge("/usr/bin/git status").allowed
    assert ruleset.judge("sudo git status").decision is None
    assert ruleset.judge("./git status").decision is None
    assert ruleset.judge("bash -c 'git status'").allowed  # the carried script is judged


def test_a_long_script_is_judged_command_by_command(ruleset):
    commands = [f"echo step {i}" for i in range(199)]
    assert ruleset.judge("\n".join(commands)).allowed
    hidden = "\n".join([*commands[:150], "git push", *commands[150:]])
    verdict = ruleset.judge(hidden)
    assert len(verdict.commands) == 200
    assert verdict.forbidden


def test_a_script_over_the_budget_is_uncertain(ruleset):
    verdict = ruleset.judge("echo x; " * (MAX_SCRIPT_CHARS // 8 + 1))
    assert verdict.decision is Decision.PROMPT
    assert "longer than" in verdict.uncertain[0].reason


def test_a_deep_nest_of_carried_scripts_is_uncertain(ruleset):
    script = "eval " * 12 + "echo deep"
    verdict = ruleset.judge(script)
    assert verdict.decision is Decision.PROMPT
    assert any("nested deeper" in u.reason for u in verdict.uncertain)


def test_heredocs_quoted_or_literal_are_data_for_commands_other_than_shells(ruleset):
    assert ruleset.judge("cat <<'EOF'\ngit push x\nEOF").allowed
    # A literal `$(` is data to cat, but bash may evaluate it later (a subscript): doubt.
    assert ruleset.judge("cat <<'EOF'\ngit push $(x)\nEOF").must_ask
    assert ruleset.judge("cat <<EOF\ngit push\nEOF").allowed
    assert ruleset.judge("bash <<'EOF'\ngit status\nEOF").allowed


def test_functions_bodies_are_judged_even_when_never_called(ruleset):
    verdict = ruleset.judge("deploy() {\n  git push\n}\necho ready")
    assert verdict.forbidden
    assert any(c.origin == "in function deploy" for c in verdict.commands)


def test_each_command_says_where_it_came_from(ruleset):
    verdict = ruleset.judge("echo $(git status) && bash -c 'env A=1 git log'")
    seen = {(" ".join(c.words), " ".join(c.runs), c.origin) for c in verdict.commands}
    assert ("git status", "git status", "in $(...)") in seen
    assert ("env A=1 git log", "git log", "bash -c") in seen


def test_comments_and_line_continuations_between_words(ruleset):
    assert ruleset.judge("git \\\n  status # git push").allowed
    assert ruleset.judge("# a note \\\ngit push").forbidden


def test_the_verdict_encodes_to_json():
    import msgspec

    verdict = RuleSet.defaults().judge("git push -f; $X")
    data = msgspec.json.decode(msgspec.json.encode(verdict))
    assert data["decision"] == "prompt"
    assert data["rule"]["name"] == "force-push"
    assert data["commands"][0]["words"] == ["git", "push", "-f"]
