"""`may_apply` and `argv_may_apply`, exec's and run's standard-library pre-check, are
exact: whenever they say no rule could touch an argv (or a plain script), the judge finds no
rule that matches, none that may, and no doubt. Their tables are the judge's own."""

from __future__ import annotations

import itertools

import pytest

from stockade.rules import (
    DEFAULT_FIRST_WORDS,
    DEFAULT_RULES,
    Decision,
    Rule,
    RuleSet,
    WordPattern,
    argv_may_apply,
    first_words,
    may_apply,
    plain_words,
)
from stockade.rules._first_word import (
    DOUBTED_BUILTINS,
    LOOKED_INTO,
    UNWRAPPED,
    normal_path,
)
from stockade.rules._unwrap import WRAPPERS

# Commands, builtins and wrappers the judge might one day look into, and lookalikes.
NAMES = (
    *[
        "true",
        "ls",
        "cat",
        "grep",
        "make",
        "npm",
        "npx",
        "python3",
        "perl",
        "node",
        "awk",
        "sed",
        "ssh",
        "tmux",
        "screen",
        "at",
    ],
    *[
        "watch",
        "strace",
        "flock",
        "parallel",
        "unshare",
        "nsenter",
        "runuser",
        "su",
        "systemd-run",
        "taskset",
    ],
    *[
        "type",
        "hash",
        "let",
        "declare",
        "typeset",
        "local",
        "export",
        "readonly",
        "unset",
        "set",
        "shopt",
        "cd",
        "kill",
    ],
    *[
        "wait",
        "jobs",
        "fg",
        "bg",
        "disown",
        "read",
        "mapfile",
        "printf",
        "echo",
        "test",
        "[",
        "[[",
        "function",
        "select",
    ],
    *[
        "busybox",
        "script",
        "expect",
        "git",
        "rm",
        "curl",
        "wget",
        "Git",
        "GIT",
        "RM",
        "gIt",
        "./git",
        "/usr/bin/git",
    ],
    *["/opt/x/rm", "../sh", "BASH", "Env", "XARGS", "Eval"],
    *["ENV", "SUDO", "Timeout", "/bin/BASH", "toybox", "BusyBox", "/bin/busybox"],
    *sorted(WRAPPERS),
    "eval",
    "trap",
    "find",
    "source",
    ".",
    "alias",
    "fish",
    "zsh",
    "g\u0456t",  # a Cyrillic i
    "r\u200bm",  # a zero-width space
)
TAILS = (
    (),
    ("push", "-f"),
    ("-rf", "/"),
    ("-c", "git push --force"),
    ("git", "push", "--force"),
    ("rm", "-rf", "~"),
    ("-exec", "rm", "-rf", "/", ";"),
    ("'git push -f'",),
    ("x=1", "git", "push", "-f"),
)
CUSTOM = (
    Rule("no-make", (WordPattern.of("make"), WordPattern.of("deploy")), Decision.FORBID, "r"),
    Rule("ok-ls", (WordPattern.of("ls"),), Decision.ALLOW, "r"),
)


@pytest.mark.parametrize(
    "rules", [DEFAULT_RULES, CUSTOM, (*DEFAULT_RULES, *CUSTOM)], ids=["defaults", "own", "both"]
)
def test_no_rule_touches_what_may_apply_lets_through(rules):
    ruleset = RuleSet(tuple(rules))
    words = first_words(ruleset.rules)
    passed = 0
    for name, tail in itertools.product(NAMES, TAILS):
        if may_apply(name, words):
            continue
        passed += 1
        judgement = ruleset.judge_argv([name, *tail])
        assert (judgement.decision, judgement.uncertain) == (None, ()), (name, tail, judgement)
        assert all(not command.matched for command in judgement.commands)
    assert passed > 100  # the pre-check lets ordinary commands through


def test_the_defaults_first_words_are_the_default_rules():
    assert first_words(DEFAULT_RULES) == DEFAULT_FIRST_WORDS


def test_every_command_the_judge_looks_inside_is_checked():
    for name in (*WRAPPERS, "sh", "bash", "busybox-sh", "fish", "eval", "trap", "find", "source"):
        assert may_apply(name, frozenset()), name
        assert may_apply(f"/usr/bin/{name}", frozenset()), name


def test_lookalikes_paths_and_other_cases_may_apply():
    assert may_apply("GIT", DEFAULT_FIRST_WORDS)
    assert may_apply("/usr/local/bin/git", DEFAULT_FIRST_WORDS)
    assert may_apply("./rm", DEFAULT_FIRST_WORDS)
    assert may_apply("g\u0456t", frozenset())  # not ASCII: only the judge can tell
    assert not may_apply("make", DEFAULT_FIRST_WORDS)
    assert not may_apply("gitk", DEFAULT_FIRST_WORDS)


def test_a_rule_that_begins_with_a_pattern_makes_every_word_possible():
    glob = Rule("g", (WordPattern.of("git*"),), Decision.PROMPT, "r")
    flag = Rule("f", (WordPattern.of("-x"),), Decision.PROMPT, "r")
    for rule in (glob, flag):
        words = first_words((rule,))
        assert words is None and may_apply("anything", words)
    assert RuleSet((glob,)).judge_argv(["gitk"]).must_ask


def test_the_judges_lookalike_table_is_what_may_apply_checks():
    from stockade.rules._first_word import LOOKED_INTO

    assert set(WRAPPERS) <= LOOKED_INTO
    for name in ("ENV", "Sudo", "/bin/BASH", "busybox", "/bin/toybox", "BusyBox", "\u0435nv"):
        assert may_apply(name, frozenset()), name


@pytest.mark.parametrize(
    "rules", [DEFAULT_RULES, CUSTOM, (*DEFAULT_RULES, *CUSTOM)], ids=["defaults", "own", "both"]
)
def test_a_plain_script_that_may_apply_lets_through_is_untouched_by_the_judge(rules):
    """`stockade run`'s pre-check: a script `plain_words` reads, whose first word
    `may_apply` lets through, is judged by the whole judge to meet no rule and no doubt."""
    ruleset = RuleSet(tuple(rules))
    words = first_words(ruleset.rules)
    passed = 0
    for name, tail in itertools.product(NAMES, TAILS):
        script = " ".join((name, *tail))
        argv = plain_words(script)
        if argv is None or may_apply(argv[0], words):
            continue
        passed += 1
        assert argv == script.split()
        judgement = ruleset.judge(script)
        assert (judgement.decision, judgement.uncertain) == (None, ()), (script, judgement)
    assert passed > 50


@pytest.mark.parametrize(
    "script",
    [
        "",
        " ",
        "echo $HOME",
        "echo `id`",
        "true; rm -rf /",
        "true\nrm -rf /",
        "true && rm -rf /",
        "a | sh",
        "cat < f",
        "echo > f",
        "x=1 make",
        "ls ~",
        "ls *",
        "echo {a,b}",
        "echo 'a'",
        'echo "a"',
        "echo \\n",
        "! true",
        "# comment",
        "time rm -rf /",
        "if true",
        "function f",
        "coproc rm",
        "(true)",
        "ls a^b",
        # What tree-sitter does not read as a command named by its first word.
        "a@b",
        "1% x",
        "x+:y",
        "-x",
        "+x y",
        "declare -i x",
        "typeset -i x",
        "local -n x",
        "export -n x",
        "readonly x",
        "unset x",
        "unsetenv x",
    ],
)
def test_what_is_not_plain_goes_to_the_judge(script):
    assert plain_words(script) is None


def test_plain_words_splits_on_blanks():
    assert plain_words("  make  test\t-j4 ") == ["make", "test", "-j4"]
    assert plain_words("python3 -m pytest tests/a.py:1") == [
        "python3",
        "-m",
        "pytest",
        "tests/a.py:1",
    ]


def test_what_tree_sitter_misreads_as_a_first_word_is_doubted_by_the_judge():
    """Why `plain_words` refuses them: the judge doubts each (or reads no command)."""
    ruleset = RuleSet(DEFAULT_RULES)
    for script in ("a@b", "1%", "x+:y", "declare -i x", "local -n x", "export -n x"):
        judgement = ruleset.judge_argv(["bash", "-c", script])
        assert judgement.uncertain, script


def test_plain_words_reads_an_ordinary_argument_with_punctuation():
    assert plain_words("ssh user@host uptime") == ["ssh", "user@host", "uptime"]
    assert plain_words("g++ -O2 a.c") == ["g++", "-O2", "a.c"]
    assert plain_words("kill %1") == ["kill", "%1"]


# --- argv_may_apply: a plain `SHELL -c SCRIPT` is judged by its script's words -----------


@pytest.mark.parametrize(
    "argv",
    [
        ["bash", "-c", "true"],
        ["sh", "-c", "make test -j4"],
        ["/bin/bash", "-c", "true"],
        ["/usr//bin/dash", "-c", "ls -la"],
        ["bash", "-c", "  python3 -m pytest  "],
        ["bash", "-c", "true", "name", "arg1"],  # $0 and $1
        ["busybox-sh", "-c", "true"],
    ],
)
def test_a_plain_shell_script_no_rule_meets_skips_the_judge(argv):
    assert not argv_may_apply(argv, DEFAULT_FIRST_WORDS)
    judgement = RuleSet(DEFAULT_RULES).judge_argv(argv)
    assert (judgement.decision, judgement.uncertain) == (None, ())


@pytest.mark.parametrize(
    "argv",
    [
        ["bash", "-c", "git push -f"],  # a rule's first word
        ["bash", "-c", "rm -rf /"],
        ["bash", "-c", "env git push -f"],  # what the judge looks inside
        ["bash", "-c", "bash -c true"],
        ["bash", "-c", "let x+1"],  # a doubt in a carried script
        ["bash", "-c", "mapfile -C cb a"],
        ["bash", "-c", "true; git push -f"],  # not plain
        ["bash", "-c", "echo $x"],
        ["bash", "-c", "-x"],  # the shell's options, not a script
        ["bash", "-c", "+o"],
        ["bash", "-c", "--"],
        ["bash", "-c", ""],
        ["bash", "-c"],
        ["bash", "-lc", "true"],  # only exactly `-c`
        ["bash", "-e", "-c", "true"],
        ["bash", "script.sh"],
        ["zsh", "-c", "true"],  # zsh's script is always a doubt
        ["/bin/zsh", "-c", "true"],
        ["BASH", "-c", "true"],  # a lookalike: a doubt
        ["b\u0430sh", "-c", "true"],
        ["fish", "-c", "true"],
        ["env", "bash", "-c", "true"],
    ],
)
def test_argv_may_apply_keeps_the_whole_argvs_answer_when_in_doubt(argv):
    assert argv_may_apply(argv, DEFAULT_FIRST_WORDS)


def test_a_rule_that_names_the_shell_keeps_the_shell_for_the_judge():
    rule = Rule("no-bash", (WordPattern.of("/bin/bash"),), Decision.PROMPT, "r")
    ruleset = RuleSet((rule,))
    words = first_words(ruleset.rules)
    for shell in ("/bin/bash", "//bin/bash", "/bin/./bash"):
        argv = [shell, "-c", "true"]
        assert argv_may_apply(argv, words)
        assert ruleset.judge_argv(argv).must_ask
    assert not argv_may_apply(["bash", "-c", "true"], words)  # `/bin/bash` is not `bash`
    assert ruleset.judge_argv(["bash", "-c", "true"]).decision is None
    by_name = Rule("no-bash", (WordPattern.of("bash"),), Decision.PROMPT, "r")
    for shell in ("bash", "/bin/bash", "/opt/x/BASH"):
        assert argv_may_apply([shell, "-c", "true"], first_words((*DEFAULT_RULES, by_name)))
    assert argv_may_apply(["bash", "-c", "true"], None)


def test_an_empty_argv_meets_no_rule():
    assert not argv_may_apply([], DEFAULT_FIRST_WORDS)


# --- first_words: a rule that asks for a pipe never meets an argv or a plain script ---------


def test_a_rule_that_asks_for_a_pipe_is_left_out_of_the_first_words():
    piped = Rule(
        "p",
        (WordPattern.of("python3"),),
        Decision.FORBID,
        "r",
        piped_from=(WordPattern.of("curl"),),
    )
    assert first_words((piped,)) == frozenset()
    assert {"git", "rm"} == DEFAULT_FIRST_WORDS
    ruleset = RuleSet((*DEFAULT_RULES, piped))
    for argv in (["python3", "-"], ["bash", "-c", "python3 x"], ["sh", "<(curl x)"]):
        judgement = ruleset.judge_argv(argv)
        assert (judgement.decision, judgement.uncertain) == (None, ()), argv
    for script in ("python3 -", "python3 -c x"):
        assert not argv_may_apply(plain_words(script) or [], first_words(ruleset.rules))
        assert ruleset.judge(script).decision is None
    # What is fed by a pipe is never plain: the judge sees the pipe.
    for script in ("curl x | python3", "python3 <(curl x)", "bash <(curl -s x)"):
        assert plain_words(script) is None
        assert ruleset.judge(script).decision is not None, script


# --- paths: a rule naming a path meets its other spellings, in the judge and here --------


@pytest.mark.parametrize(
    ("literal", "spellings"),
    [
        (
            "/usr/bin/make",
            ("/usr//bin/make", "/usr/bin/./make", "//usr/bin/make", "/usr/bin/make/"),
        ),
        ("/bin/bash", ("//bin/bash", "/bin//bash", "/bin/./bash", "///bin/bash")),
        ("./deploy.sh", (".//deploy.sh", "././deploy.sh")),
        ("/usr/bin/make/", ("/usr/bin/make", "/usr//bin/make/.")),
    ],
)
def test_a_rule_naming_a_path_meets_its_other_spellings(literal, spellings):
    rule = Rule("path", (WordPattern.of(literal),), Decision.FORBID, "r")
    ruleset = RuleSet((rule,))
    words = first_words(ruleset.rules)
    for spelling in spellings:
        assert may_apply(spelling, words), spelling
        assert ruleset.judge_argv([spelling, "x"]).forbidden, spelling
        assert ruleset.judge(f"{spelling} x").forbidden, spelling


def test_a_path_is_not_another_command():
    rule = Rule("path", (WordPattern.of("./deploy.sh"),), Decision.FORBID, "r")
    ruleset = RuleSet((rule,))
    assert not may_apply("deploy.sh", first_words(ruleset.rules))
    assert ruleset.judge_argv(["deploy.sh"]).decision is None  # PATH's, not the file here
    assert normal_path("/usr/bin/../bin/make") == "/usr/bin/../bin/make"  # a link decides
    assert normal_path("./") == normal_path(".") == "."
    assert normal_path("~//x/") == "~/x"


# --- the tables ---------------------------------------------------------------------------


def test_every_builtin_the_judge_doubts_is_looked_into():
    ruleset = RuleSet(DEFAULT_RULES)
    assert DOUBTED_BUILTINS <= LOOKED_INTO
    for script in ("let x+1", "mapfile -C cb a", "readarray -tC cb a", "compgen -C cmd x"):
        assert ruleset.judge_argv(["bash", "-c", script]).uncertain, script
        assert may_apply(script.split()[0], frozenset())


def test_a_builtin_is_found_by_its_name_not_its_lookalikes():
    """bash finds a builtin by its exact name: `LET x` is a program of that name."""
    ruleset = RuleSet(DEFAULT_RULES)
    assert ruleset.judge_argv(["bash", "-c", "Mapfile x"]).uncertain == ()
    assert UNWRAPPED.isdisjoint(DOUBTED_BUILTINS)
