"""`may_apply` and `argv_may_apply`, exec's and run's standard-library pre-check, are
exact: whenever they say no rule could touch an argv (or a plain script), the judge finds no
rule that matches, none that may, and no doubt. Their tables are the judge's own; a
property test hunts for an argv or a script where they are not
(`STOCKADE_PRECHECK_EXAMPLES=20000` for a longer hunt)."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

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
    SHELLS,
    UNWRAPPED,
    normal_path,
)
from stockade.rules._parse import BashParser
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


def test_a_path_in_another_case_and_spelling_may_be_the_rules():
    """On a case-insensitive file system `/USR//bin/make` is `/usr/bin/make`."""
    rule = Rule("path", (WordPattern.of("/usr/bin/make"),), Decision.FORBID, "r")
    ruleset = RuleSet((rule,))
    for spelling in ("/USR//bin/make", "/usr/bin/./MAKE"):
        assert may_apply(spelling, first_words(ruleset.rules))
        assert ruleset.judge_argv([spelling]).must_ask, spelling


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
    for script in (
        "let x+1",
        "mapfile -C cb a",
        "readarray -tC cb a",
        "compgen -C cmd x",
        "hash -p /bin/rm ls",
    ):
        assert ruleset.judge_argv(["bash", "-c", script]).uncertain, script
        assert may_apply(script.split()[0], frozenset())


def test_a_builtin_is_found_by_its_name_not_its_lookalikes():
    """bash finds a builtin by its exact name: `LET x` is a program of that name."""
    ruleset = RuleSet(DEFAULT_RULES)
    assert ruleset.judge_argv(["bash", "-c", "Mapfile x"]).uncertain == ()
    assert UNWRAPPED.isdisjoint(DOUBTED_BUILTINS)


# --- the property: whatever the pre-check lets through, the judge finds nothing in ----------

EXAMPLES = settings(
    max_examples=int(os.environ.get("STOCKADE_PRECHECK_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# The words the pre-check might misjudge: everything it looks inside, the rules' words in
# their spellings, punctuation tree-sitter reads apart, options shells and builtins take.
_PUNCTUATION = (
    *("a@b", "x@", "@", "1%", "a%b", "%", "%1", "x+:y", "+:", "x:+y", "a:b", "a,b", "x+", "g++"),
    *(":", ".", "..", "/.", "./.", "-", "--", "+", "/", "//", "~", "*", "?", "x=1", "a+=b"),
    *("$x", "'q'", '"d"', "\\", ";", "|", "&", "#", "!", "^", "(", ")", "<", ">", "{a,b}"),
    *("`id`", "$(id)", "<(curl x)", "\t", "\n", "1", "0", "-1", "_", "a.b", "-_"),
)
_OPTIONS = (
    *("-c", "-lc", "-ic", "-s", "-e", "-x", "+x", "-o", "+o", "-O", "-C", "-tC", "-Ccb", "-d"),
    *("-i", "-n", "-p", "-v", "-u", "-f", "-r", "-rf", "-R", "--force", "--recursive", "-F"),
)
_WORDS = (
    *("git", "rm", "make", "ls", "curl", "push", "deploy", "origin", "+main", "cb", "x"),
    *("true", "echo", "python3", "hash", "enable", "command_not_found_handle", "wait"),
    *("read", "printf", "getopts", "test", "[", "[[", "]]", "((", "{", "}", "!"),
    *("Git", "GIT", "RM", "Rm", "MAKE", "Bash", "BASH", "ENV", "Eval", "LET", "Mapfile"),
    *("g\u0456t", "r\u200bm", "\u0435nv", "b\u0430sh"),
    *("BASH_ENV", "BASH_ENV=x", "--rcfile", "--init-file", "HOME", "-vHOME"),
)
_PATHS = (
    *("/usr/bin/git", "/usr//bin/git", "//usr/bin/git", "/bin/./rm", "./rm", "../rm", "rm/"),
    *("/usr/bin/make", "/usr//bin/make", "/usr/bin/./make", "/usr/bin/make/", "/usr/bin/make/."),
    *("/bin/bash", "//bin/bash", "/bin//bash", "/bin/sh", "./bash", "/opt/x/bash", "/bin/BASH"),
    *("./deploy.sh", ".//deploy.sh", "././deploy.sh", "deploy.sh", "bin/make", "bin//make"),
    *("/usr/bin/env", "/usr/bin/zsh", "/bin/.", "/usr/bin/mapfile", "~/bin/git", "/", "~/"),
    *("/usr/lib/../bin/make", "/opt/x/../../usr/bin/git", "x/../deploy.sh", "/bin/../..", "~/a/.."),
    *("~root/../usr/bin/make", "x/../bin/make", "a/../scripts/a.sh", "~+/deploy.sh", "~/../bin/x"),
    *("/usr/bin/g?t", "/usr/bin/gi[t]", "e?v", "/dat[a]", "$W", "/proc/self/root/opt/deploy.sh"),
    *("/dev/fd/3/deploy.sh", "/proc/1/cwd/../bin/make", "/proc/self/exe", "/dev/fd/3"),
    *("/proc/self/root/proc/self/root/opt/deploy.sh", "/tmp/../proc/self/root/bin/make"),
    *("/proc/1/task/2/exe", "/dev/stdin", "/proc/self/cwd/..", "/proc/self/root/bin/bash"),
    *("~-/deploy.sh", "~1/bin/x", '"$D"/\u0435nv'),
)
_RESERVED = (
    *("if", "then", "fi", "for", "in", "do", "done", "case", "esac", "while", "until"),
    *("select", "function", "time", "coproc", "declare", "typeset", "local", "export"),
    *("readonly", "unset", "unsetenv", "elif", "else"),
)
# Bash's builtins and keywords (`compgen -b`, `compgen -k`), tree-sitter's keywords and the
# commands that run others, written out here: not read from the tables under test.
_BUILTINS = (
    *(".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command"),
    *("compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo"),
    *("enable", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash"),
    *("help", "history", "jobs", "kill", "let", "local", "logout", "mapfile", "popd"),
    *("printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift"),
    *("shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset"),
    *("ulimit", "umask", "unalias", "unset", "unsetenv", "wait", "[[", "]]", "{", "}", "!"),
)
_RUNNERS = (
    *("sh", "bash", "dash", "ksh", "mksh", "zsh", "ash", "busybox-sh", "fish", "csh", "tcsh"),
    *("nu", "elvish", "xonsh", "pwsh", "env", "nice", "timeout", "nohup", "coproc", "time"),
    *("stdbuf", "ionice", "setsid", "xargs", "sudo", "doas", "chroot", "busybox", "toybox"),
    *("find", "watch", "strace", "flock", "parallel", "unshare", "nsenter", "runuser", "su"),
    *("systemd-run", "taskset", "script", "expect", "ssh", "perl", "python3", "node", "awk"),
)
VOCABULARY = tuple(
    dict.fromkeys(
        (
            *sorted(LOOKED_INTO),
            *_BUILTINS,
            *_RUNNERS,
            *_PUNCTUATION,
            *_OPTIONS,
            *_WORDS,
            *_PATHS,
            *_RESERVED,
        )
    )
)
_PLAIN_TEXT = st.text(
    alphabet="abcgimrtxyzABGRZ0129-_./:,+@%", min_size=1, max_size=7
)  # what plain_words lets in, tree-sitter's corner cases found at random
# A later word: an option as likely as any word of the vocabulary.
_WORD = st.one_of(
    st.sampled_from(VOCABULARY), st.sampled_from(_OPTIONS), st.sampled_from(_WORDS), _PLAIN_TEXT
)
# A first word: each kind as likely as the others (the first word is what the pre-check
# reads, and a builtin the judge doubts is one word of hundreds in the vocabulary).
_FIRST = st.one_of(
    st.sampled_from(_BUILTINS),
    st.sampled_from(_RUNNERS),
    st.sampled_from(_RESERVED),
    st.sampled_from(_PUNCTUATION),
    st.sampled_from(_PATHS),
    st.sampled_from((*_WORDS, *_OPTIONS)),
    _PLAIN_TEXT,
)
_SHELL = st.sampled_from(
    (*sorted(SHELLS), "/bin/bash", "/usr//bin/sh", "./dash", "BASH", "/bin/zsh", "fish")
)
_SEPARATOR = st.sampled_from((" ", " ", " ", "  ", "\t", " \t "))


@st.composite
def _words(draw: st.DrawFn, depth: int = 0) -> list[str]:
    if depth < 2 and draw(st.integers(0, 3)) == 0:
        # A nested `SHELL -c SCRIPT`: plain only when the inner script is one word.
        return [draw(_SHELL), "-c", draw(_script(depth + 1)), *draw(st.lists(_WORD, max_size=2))]
    return [draw(_FIRST), *draw(st.lists(_WORD, max_size=4))]


@st.composite
def _script(draw: st.DrawFn, depth: int = 0) -> str:
    words = draw(_words(depth))
    separators = [draw(_SEPARATOR) for _ in words]
    lead = draw(st.sampled_from(("", "", " ", "\t")))
    return lead + "".join(w + s for w, s in zip(words, separators, strict=True))


@st.composite
def _argv(draw: st.DrawFn) -> list[str]:
    if draw(st.booleans()):
        option = draw(st.sampled_from(("-c", "-c", "-c", "-lc", "-e")))
        return [draw(_SHELL), option, draw(_script()), *draw(st.lists(_WORD, max_size=2))]
    return draw(_words())


_RULE_WORDS = (
    *("git", "rm", "make", "ls", "deploy", "true", "echo", "python3", "x", "a@b", "1%"),
    *("/usr/bin/make", "/bin/bash", "bash", "sh", "./deploy.sh", "bin/make", "/usr/bin/git/"),
    *("Git", "MAKE", "env", "eval", "let", "mapfile", "hash", "-x", "git*", "~/bin/x"),
    *("/opt/deploy.sh", "scripts/a.sh", "./scripts/a.sh", "./scripts/*.sh", "/dat[a]"),
)


@st.composite
def _rules(draw: st.DrawFn) -> tuple[Rule, ...]:
    count = draw(st.integers(1, 3))
    made = []
    for index in range(count):
        prefix = [
            WordPattern.of(*draw(st.lists(st.sampled_from(_RULE_WORDS), min_size=1, max_size=2)))
        ]
        if draw(st.booleans()):
            prefix.append(
                WordPattern.of(draw(st.sampled_from(("push", "-rf", "deploy", "x", "*"))))
            )
        args = ()
        if draw(st.booleans()):
            args = (WordPattern.of(draw(st.sampled_from(("-f", "--force*", "/", "~", "x")))),)
        piped = (WordPattern.of("curl"),) if draw(st.integers(0, 4)) == 0 else ()
        decision = draw(st.sampled_from(tuple(Decision)))
        made.append(Rule(f"r{index}", tuple(prefix), decision, "r", args=args, piped_from=piped))
    return tuple(made)


_PARSER = BashParser()
_RULE_SETS = st.one_of(
    st.sampled_from((DEFAULT_RULES, CUSTOM, (*DEFAULT_RULES, *CUSTOM))),
    _rules(),
    _rules().map(lambda rules: (*DEFAULT_RULES, *rules)),
)


def _untouched(judgement, what) -> None:
    assert judgement.decision is None, (what, judgement)
    assert judgement.uncertain == (), (what, judgement)
    assert all(not command.matched for command in judgement.commands), (what, judgement)


@EXAMPLES
@given(rules=_RULE_SETS, argv=_argv(), script=_script())
def test_what_the_pre_check_lets_through_the_judge_finds_nothing_in(rules, argv, script):
    """exec's pre-check on an argv (and the script as `bash -c`'s), run's on a script (and
    the argv's words as a script): whatever they let through meets no rule and no doubt."""
    ruleset = RuleSet(tuple(rules), parser=_PARSER)
    words = first_words(ruleset.rules)
    for one in (argv, ["bash", "-c", script]):
        if not argv_may_apply(one, words):
            event("an argv let through")
            _untouched(ruleset.judge_argv(one), one)
    for one in (script, " ".join(argv)):
        plain = plain_words(one)
        if plain is not None:
            assert plain == one.split()
            if not argv_may_apply(plain, words):
                event("a script let through")
                _untouched(ruleset.judge(one), one)


def test_every_builtin_and_runner_with_every_option_is_held_to_the_judge():
    """The sweep the property test samples: each first word with each option (and an
    operand), as an argv and as `bash -c`'s script."""
    ruleset = RuleSet(DEFAULT_RULES, parser=_PARSER)
    words = first_words(ruleset.rules)
    passed = 0
    for first in dict.fromkeys((*_BUILTINS, *_RUNNERS, *_RESERVED, *_WORDS)):
        for option, operand in itertools.product(("", *_OPTIONS), ("", "x", "1")):
            argv = [first, *filter(None, (option, operand))]
            for one in (argv, ["bash", "-c", " ".join(argv)]):
                if not argv_may_apply(one, words):
                    passed += 1
                    _untouched(ruleset.judge_argv(one), one)
    assert passed > 5000
