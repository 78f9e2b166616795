"""Whether any rule could touch an argv, told from its first word with the standard library
alone: `stockade exec` and `stockade run` ask this before they pay for loading the rules and
the judge.

Exact, never a guess: when `may_apply` (or `argv_may_apply`) says False, `RuleSet.judge_argv`
would find no rule that matches, no rule that may match and no doubt (tests/rules/
test_first_word.py holds the tables here to the judge's own, and a property test the
answers).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ._rule import Rule

# The interpreters whose `-c` script (or heredoc) is bash, near enough to judge it as bash
# (zsh's is judged as bash too, never without a doubt: `_unwrap.NOT_EXACTLY_BASH`).
SHELLS = frozenset({"sh", "bash", "dash", "ksh", "mksh", "zsh", "ash", "busybox-sh"})
# Shells whose language is not bash: what they are given cannot be judged.
OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh"})
# The shells whose plain `-c` script the pre-check reads itself (`argv_may_apply`): all but
# zsh, whose script the judge always doubts.
_UNWRAPPED_SHELLS = SHELLS - {"zsh"}
# The wrappers whose inner command is judged (`_unwrap.WRAPPERS` is keyed by these), with
# the multi-call binaries that run their first word as an applet (`busybox rm`).
WRAPPER_NAMES = frozenset(
    {
        *("env", "nice", "timeout", "nohup", "coproc", "time", "command", "builtin", "exec"),
        *("stdbuf", "ionice", "setsid", "xargs", "sudo", "doas", "chroot"),
        *("busybox", "toybox"),
    }
)
# What the judge unwraps or reads a script from: a wrapper, a shell or `eval`/`trap`/
# `find -exec` whose script or command is judged in turn, and what is itself a doubt
# (`source`, an alias definition). The judge finds them in any case and through lookalike
# letters too (a name whose `skeleton` is one of these: `_unwrap`'s lookalike table).
UNWRAPPED = frozenset(
    {
        *SHELLS,
        *OTHER_SHELLS,
        *WRAPPER_NAMES,
        *("eval", "trap", "find", "source", ".", "alias"),
    }
)
# Builtins the judge doubts as such, by their exact name: `let` reads arithmetic (a doubt
# in a carried script, whose variables its caller set), `mapfile`/`readarray -C` and
# `compgen -C` run a string as code, `hash -p` makes a name run another program.
DOUBTED_BUILTINS = frozenset({"let", "mapfile", "readarray", "compgen", "hash"})
# Every command the judge looks inside, whatever the rules (git, its global options, only
# for a rule naming git). `may_apply` lets each through: it lower-cases an ASCII word (an
# ASCII word's skeleton is its lower case) and lets every other through.
LOOKED_INTO = UNWRAPPED | DOUBTED_BUILTINS
# The default rules' first words, lower-case (`_defaults.DEFAULT_RULES`; `download-to-shell`
# asks for a pipe, which no argv has): what exec with no composition checks without
# making a rule.
DEFAULT_FIRST_WORDS = frozenset({"git", "rm"})


def normal_path(value: str) -> str:
    """A path as the kernel resolves its spelling: repeated `/` one (a leading `//` too: it
    is `/` on Linux and macOS), `/./` dropped, a trailing `/` or `/.` dropped (`/` stays
    `/`; `./x` stays `./x`, a command word without `/` being looked up in PATH); `..` is
    kept (a symbolic link decides where it leads). A word without `/` is as given. The
    judge compares a word with a rule's path literal (`/usr/bin/make`, `./deploy.sh`,
    `~/`) this way, and the pre-check a first word with the rules'."""
    if "/" not in value:
        return value
    while "//" in value:
        value = value.replace("//", "/")
    while "/./" in value:
        value = value.replace("/./", "/")
    if value.endswith("/."):
        value = value[:-1]
    return value.rstrip("/") or "/"


def collapsed_paths(value: str) -> tuple[str, ...]:
    """`value` with each `..` taking away the component before it, as a path without
    symbolic links resolves (`/srv/../data` is `/data`); none when it holds no `..`.
    Only where no link stands on the way is this where the path leads, so a word that
    meets a rule's path only so spelt may meet it: the judge is unsure, never certain.
    A relative result is given both ways a rule may spell it: `x/../bin/make` is
    `./bin/make` and `bin/make` (and `x/../deploy.sh` is `./deploy.sh`: a word without
    `/` would be a name looked up in PATH)."""
    spelt = normal_path(value)
    if ".." not in spelt.split("/"):
        return ()
    collapsed = os.path.normpath(spelt)
    if collapsed.startswith("/") or collapsed in (".", "..") or collapsed.startswith("../"):
        return (collapsed,)
    if "/" not in collapsed:
        return ("./" + collapsed,)
    return ("./" + collapsed, collapsed)


# Directories the kernel reaches through a link of its own, whatever their spelling says:
# a process's root and working directory, and a directory open on a file descriptor.
_LINK_DIRS = frozenset({"root", "cwd"})
_FD_DIRS = frozenset({"fd", "map_files"})


def past_a_link(value: str) -> str | None:
    """What follows a directory the kernel reaches through a magic link (`/proc/self/root`,
    `/proc/1/cwd`, `/proc/self/task/1/root`, `/proc/self/fd/3`, `/dev/fd/3`, `/dev/stdin`):
    `/proc/self/root/data` is `/data`, `/dev/fd/3/x` is `x` in whatever fd 3 holds. None
    for any other path."""
    if not value.startswith(("/", "//")) or ("/proc/" not in value and "/dev/" not in value):
        return None
    rest = _past_a_link_parts(normal_path(value).split("/")[1:])
    if rest is None:
        return None
    climbs = [index for index, part in enumerate(rest) if part == ".."]
    return "/" + "/".join(rest[climbs[-1] + 1 :] if climbs else rest)


def _past_a_link_parts(parts: list[str]) -> list[str] | None:
    if parts[:1] == ["proc"] and len(parts) >= 3:
        rest = parts[2:]
        if rest[:1] == ["task"] and len(rest) >= 3:
            rest = rest[2:]
        if rest[:1] and rest[0] in _LINK_DIRS:
            return rest[1:]
        if rest[:1] and rest[0] in _FD_DIRS and len(rest) >= 2:
            return rest[2:]
        return None
    if parts[:2] == ["dev", "fd"] and len(parts) >= 3:
        return parts[3:]
    if parts[:1] == ["dev"] and len(parts) >= 2 and parts[1] in ("stdin", "stdout", "stderr"):
        return parts[2:]
    return None


def first_words(rules: Iterable[Rule]) -> frozenset[str] | None:
    """The words (lower-case, paths as `normal_path` spells them) the rules' commands begin
    with; None when a rule begins with a pattern (a glob, an option, `~`, a non-ASCII
    word), which any word may meet. A rule that asks for a pipe (`piped_from`) is left out:
    no command of an argv or of a plain script is fed by one."""
    found: set[str] = set()
    for rule in rules:
        if rule.piped_from:
            continue
        for alternative in rule.prefix[0].alternatives:
            literal = alternative.literal
            if (
                literal is None
                or alternative.short_flag is not None
                or alternative.home
                or not literal.isascii()
            ):
                return None
            found.add(normal_path(literal).lower())
    return frozenset(found)


def _named(first: str, words: frozenset[str]) -> bool:
    """Whether a rule beginning with one of `words` may name the ASCII word `first`: as
    written in any case and spelling of its path (`..` taken away too), or by its base
    name (`/usr/bin/git`)."""
    whole = first.lower()
    if past_a_link(whole) is not None:  # `/proc/self/root/opt/deploy.sh`: anywhere
        return True
    spellings = {whole, normal_path(whole), whole.rpartition("/")[2]}
    for collapsed in collapsed_paths(whole):  # `/opt/x/../deploy.sh`, and its base name
        spellings |= {collapsed, collapsed.rpartition("/")[2]}
    return bool(spellings & words)


def may_apply(first: str, words: frozenset[str] | None) -> bool:
    """Whether a rule beginning with one of `words` (None: any word) could apply to a
    command whose first word is `first`: as written, by its base name (`/usr/bin/git`),
    another spelling of its path (`/usr//bin/make`), another case or a lookalike letter
    (`GIT`, a Cyrillic i), or through what the judge looks inside (`env git push`,
    `bash -c '...'`)."""
    if words is None or not first.isascii():
        return True
    return _named(first, words | LOOKED_INTO)


def argv_may_apply(argv: Sequence[str], words: frozenset[str] | None) -> bool:
    """`may_apply` for a whole argv: the same answer, but for `SHELL -c SCRIPT [ARG...]`
    (a shell the judge reads as bash, not zsh) whose script `plain_words` reads as one
    plain command, where the script's words are asked about instead of the shell's name
    (the judge finds the shell's `-c` script and nothing else in it). A rule beginning with
    the shell's name, a script the shell could take for its options (`-x`, `+o`), a script
    that is not plain: the whole argv's answer."""
    if not argv:
        return False
    if any("BASH_ENV" in arg for arg in argv):
        return True  # a later bash sources the file it names: the judge doubts it
    first = argv[0]
    if (
        words is None
        or len(argv) < 3
        or argv[1] != "-c"
        or first.rpartition("/")[2] not in _UNWRAPPED_SHELLS
        or not first.isascii()
        or _named(first, words)
        or argv[2][:1] in ("-", "+")
    ):
        return may_apply(first, words)
    script = plain_words(argv[2])
    if script is None:
        return True
    return may_apply(script[0], words)


# What a script may hold for `plain_words` to read it as one command's words: letters,
# digits, spaces and the punctuation that means nothing to bash in a word. Out: quotes,
# `\`, `$`, backquotes, operators (`;&|<>()`), newlines, globs and brackets (`*?[]{}`),
# `~`, `=` (an assignment), `#` (a comment), `!` (history, negation), `^` (a pipe to sh).
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t-_./:,+@%")
# The words that begin what is not a simple command: bash's reserved words, and the
# builtins tree-sitter reads as declarations (`declare -i x`, a doubt) or `unset`.
_NOT_SIMPLE = frozenset(
    {
        *("if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while"),
        *("until", "do", "done", "in", "function", "time", "coproc"),
        *("declare", "typeset", "local", "export", "readonly", "unset", "unsetenv"),
    }
)


def plain_words(script: str) -> list[str] | None:
    """`script` as the argv of its one simple command when bash (and tree-sitter's bash) could
    read it no other way (nothing expands, nothing redirects, no second command, no
    reserved word or declaration first), else None. A first word tree-sitter misreads is
    not plain either: one holding `@`, `%` or `+:` (read as parts of an expansion: `a@b`,
    `1%`, `x+:y`), or beginning with `-` or `+`. `stockade run` then judges those words as
    exec does (`argv_may_apply`)."""
    if not script or not all(char in _PLAIN for char in script):
        return None
    words = script.split()
    if not words:
        return None
    first = words[0]
    if first in _NOT_SIMPLE or first[0] in "-+" or "@" in first or "%" in first or "+:" in first:
        return None
    return words
