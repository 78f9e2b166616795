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
SHELLS = frozenset(
    {
        *("sh", "bash", "dash", "ksh", "mksh", "zsh", "ash", "busybox-sh", "rbash", "rzsh"),
        *("zsh5", "yash", "posh", "lksh", "ksh93", "oksh", "hush", "rksh", "pdksh"),
    }
)
# zsh under its other names: its script is judged as bash with a doubt.
ZSHES = frozenset({"zsh", "rzsh", "zsh5"})
# The shell another name of one runs (a rule naming `bash` meets `rbash` too).
_SHELL_OF = {"rbash": "bash", "rzsh": "zsh", "zsh5": "zsh", "ksh93": "ksh", "lksh": "ksh"}
_SHELL_OF |= {"oksh": "ksh", "rksh": "ksh", "pdksh": "ksh"}
# The shells whose language is bash's own (`$'...'` included); what another carries is
# judged as bash too, with a doubt where it holds quoting only bash reads so.
BASHES = frozenset({"bash", "rbash"})
# Shells whose language is not bash: what they are given cannot be judged.
OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh"})
# The shells whose plain `-c` script the pre-check reads itself (`argv_may_apply`): all but
# zsh, whose script the judge always doubts.
_UNWRAPPED_SHELLS = SHELLS - ZSHES


def shell_of(name: str) -> str | None:
    """The shell a command name runs (one of `SHELLS`, by its usual name: `rbash` is bash),
    under another name too: a version
    (`bash5.2`, `zsh-5.9`, `ksh93u`) or a restricted shell's leading `r` (`rdash`); None for
    any other name. Exact names first: this runs for every command the judge unwraps."""
    if name in SHELLS:
        return _SHELL_OF.get(name, name)
    stripped = name.rstrip("0123456789.-_")
    if stripped != name and stripped in SHELLS:
        return _SHELL_OF.get(stripped, stripped)
    if name[:1] == "r" and len(name) > 3:
        return shell_of(name[1:])
    return None


def is_loader(name: str) -> bool:
    """Whether a command name is the dynamic loader (`ld-linux-x86-64.so.2`, `ld.so`),
    which runs the program it is given."""
    return name == "ld.so" or (name[:3] == "ld-" and ".so" in name)


# The wrappers whose inner command is judged (`_unwrap.WRAPPERS` is keyed by these), with
# the multi-call binaries that run their first word as an applet (`busybox rm`).
WRAPPER_NAMES = frozenset(
    {
        *("env", "nice", "timeout", "nohup", "coproc", "time", "command", "builtin", "exec"),
        *("stdbuf", "ionice", "setsid", "xargs", "sudo", "doas", "chroot"),
        *("busybox", "toybox"),
        *("jobs", "taskset", "flock", "setpriv", "unshare", "chrt", "prlimit", "setarch"),
        *("strace", "ld.so", "script", "su"),
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
# `fc` and `history -s` rerun or make a history entry to run.
DOUBTED_BUILTINS = frozenset({"let", "mapfile", "readarray", "compgen", "hash", "fc", "history"})
# Every command the judge looks inside, whatever the rules (git, its global options, only
# for a rule naming git). `may_apply` lets each through: it lower-cases an ASCII word (an
# ASCII word's skeleton is its lower case) and lets every other through.
LOOKED_INTO = UNWRAPPED | DOUBTED_BUILTINS
# What the judge doubts wherever a script or an argv names it (`_judge`): a file bash
# sources first, the tables of what a command name runs, exported functions, the trace
# prompt bash expands, git's configuration from the environment.
JUDGED_NAMES = ("BASH_ENV", "BASH_CMDS", "BASH_ALIASES", "BASH_FUNC_", "PS4", "GIT_CONFIG")
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
_STANDARD = frozenset({"stdin", "stdout", "stderr"})
# The last component of such a link, as a word's known end may begin past an unknown
# start (`"$P"/root/data` with P=/proc/self): a file descriptor's number too.
LINK_ENDS = _LINK_DIRS | _STANDARD
_GLOB = frozenset("*?[")


def past_a_link(value: str, *, glob: bool = False) -> str | None:
    """What follows a directory the kernel reaches through a magic link (`/proc/self/root`,
    `/proc/1/cwd`, `/proc/self/task/1/root`, `/proc/self/fd/3`, `/dev/fd/3`, `/dev/stdin`):
    `/proc/self/root/data` is `/data`, `/dev/fd/3/x` is `x` in whatever fd 3 holds; `` when
    nothing follows, or a `..` climbs back out of it (`/proc/self/cwd`, `/dev/fd/3/x/..`):
    any path. Links one behind another (`/proc/self/root/proc/self/root/data`) and a link
    reached once `..` takes away the component before it (`/tmp/../proc/self/root/x`)
    count. `glob`: a component holding `*`, `?` or `[` may be any name (`/proc/*/root`).
    None for any other path."""
    if not value.startswith("/"):
        return None
    if not glob and "/proc/" not in value and "/dev/" not in value:
        return None
    spelt = normal_path(value)
    rest = _past_a_link_parts(spelt.split("/")[1:], glob)
    for collapsed in collapsed_paths(spelt) if rest is None else ():
        rest = _past_a_link_parts(collapsed.split("/")[1:], glob)
    return None if rest is None else _beyond(rest, glob)


def _beyond(rest: list[str], glob: bool) -> str:
    """Where the components past a link lead, as far as known: past its last `..`, past a
    further link."""
    while rest:
        climbs = [index for index, part in enumerate(rest) if _may_climb(part, glob)]
        rest = rest[climbs[-1] + 1 :] if climbs else rest
        further = _past_a_link_parts(rest, glob) if rest else None
        if further is None:
            break
        rest = further
    return "/" + "/".join(rest) if rest else ""


def _may_climb(part: str, glob: bool) -> bool:
    # A glob's `.?`, `.*`, `.[` match `..` once `globskipdots` is off (before bash 5.2).
    return part == ".." or (glob and part[:1] == "." and part[1:2] in _GLOB)


def _past_a_link_parts(parts: list[str], glob: bool = False) -> list[str] | None:
    def named(part: str, *names: str) -> bool:
        return part in names or (glob and not _GLOB.isdisjoint(part))

    if len(parts) >= 3 and named(parts[0], "proc"):
        rest = parts[2:]
        if named(rest[0], *_LINK_DIRS):
            return rest[1:]
        if len(rest) >= 2 and named(rest[0], *_FD_DIRS):
            return rest[2:]
        if len(rest) >= 3 and named(rest[0], "task"):
            return _past_a_link_parts(["proc", *rest[1:]], glob)
        if not glob:
            return None
    if len(parts) >= 3 and named(parts[0], "dev") and named(parts[1], "fd"):
        return parts[3:]
    if len(parts) >= 2 and named(parts[0], "dev") and named(parts[1], *_STANDARD):
        return parts[2:]
    return None


def ends_past_a_link(known_end: str) -> tuple[str, ...]:
    """The ends a word may have past a magic link when all before `known_end` is unknown
    (an expansion's value, a moved home): what follows each of its components that may
    end such a link (`root`, `cwd`, a descriptor's number, `stdin`; its first, cut,
    component when it may be the end of one: `ot/data`), as `past_a_link` gives it
    (`"$P"/root/data` may be `/data`). A number counts only with a name after it."""
    parts = known_end.split("/")
    ends: list[str] = []
    for index, part in enumerate(parts):
        # A descriptor's number ending the word is the link itself, no directory past it
        # (`"$out"/1` is as common as a build's numbered directory).
        numbered = part.isdigit() and any(parts[index + 1 :])
        if index == 0:
            ending = part != "" and (numbered or any(n.endswith(part) for n in LINK_ENDS))
        else:
            ending = part in LINK_ENDS or numbered
        beyond = _beyond(parts[index + 1 :], glob=False) if ending else None
        if beyond is not None and beyond not in ends:
            ends.append(beyond)
    return tuple(ends)


def runs_a_link(value: str) -> bool:
    """Whether a command word runs the program a kernel link leads to, which its spelling
    does not name: a process's executable (`/proc/self/exe` is the shell that runs it), or
    a file descriptor (`exec 3</bin/bash; /dev/fd/3 -c ...`, `/dev/stdin < x`)."""
    if not value.startswith("/") or ("/proc/" not in value and "/dev/" not in value):
        return False
    beyond = past_a_link(value)
    if beyond == "":
        return True
    for spelt in (beyond, normal_path(value), *collapsed_paths(value)):
        parts = (spelt or "").split("/")
        if len(parts) >= 4 and parts[1] == "proc" and parts[-1] == "exe":
            return True
    return False


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
    if past_a_link(whole) is not None or runs_a_link(whole):  # `/proc/self/root/x`: anywhere
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
    base = first.rpartition("/")[2].lower()
    if shell_of(base) is not None or is_loader(base):
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
    if any(marker in arg for arg in argv for marker in JUDGED_NAMES):
        return True  # a variable that changes what a later command runs: a doubt
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
