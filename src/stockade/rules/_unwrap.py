"""What a simple command really runs: wrappers (`env`, `nice`, `timeout`, `sudo`, ...)
unwrapped, a path's base name, git's global options skipped, and the scripts it carries
(`bash -c`, `eval`, `trap`, a shell fed a heredoc) handed back to be parsed in turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs

from ..reprs import fields_repr
from ._first_word import (
    BASHES,
    LINK_ENDS,
    OTHER_SHELLS,
    UNWRAPPED,
    WRAPPER_NAMES,
    ZSHES,
    collapsed_paths,
    is_loader,
    normal_path,
    past_a_link,
    runs_a_link,
    shell_of,
)
from ._parse import Stdin
from ._words import Word, skeleton

# Where a path's base name is the command a rule names, for an allow rule too; from any
# other directory (`./git`) only forbid and prompt rules see the base name.
SYSTEM_DIRS: Final = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin",
     "/opt/homebrew/bin", "/run/current-system/sw/bin"}
)  # fmt: skip
_UNWRAP_DEPTH: Final = 16


@attrs.frozen
class Wrapper:
    """A command that runs the rest of its words as a command, and its options.

    `transparent`: an allow rule that matches the inner command allows it (the wrapper
    changes no one's identity or root); `sudo`, `doas`, `chroot` are not."""

    __repr__ = fields_repr

    name: str
    values: frozenset[str] = frozenset()  # options that take a value (`-n 10`, `-n10`, `--x=1`)
    flags: frozenset[str] = frozenset()  # options that take none (clusters allowed)
    positional: int = 0  # operands before the command (timeout's DURATION, chroot's NEWROOT)
    assignments: bool = False  # NAME=VALUE words before the command (env)
    numeric: bool = False  # `-10` is an option (nice)
    no_command: frozenset[str] = frozenset()  # options after which nothing is run
    refused: frozenset[str] = frozenset()  # options that make the command unknowable
    transparent: bool = True
    # Options whose value is a script run by a shell (`su -c`, `flock FILE -c`, `script -c`).
    scripts: frozenset[str] = frozenset()
    # What runs when the words say no command: "" nothing (or the operands), "empty" a shell
    # when no command is given (`unshare -r`, `setarch x86_64`), "args" a shell given the
    # words after the operands (`su root -c ...`), "alone" a shell whatever follows (`script
    # FILE`, whose operand is its log). That shell reads its standard input.
    shell: str = ""


def _w(name: str, values: str = "", flags: str = "", **kwargs: Any) -> Wrapper:
    return Wrapper(name, frozenset(values.split()), frozenset(flags.split()), **kwargs)


WRAPPERS: Final = {
    w.name: w
    for w in (
        _w("env", "-u --unset -C --chdir", "-i --ignore-environment -0 --null -v --debug -",
           assignments=True, refused=frozenset({"-S", "--split-string"})),
        _w("nice", "-n --adjustment", numeric=True),
        _w("timeout", "-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose",
           positional=1),
        _w("nohup"),
        # `coproc NAME { ...; }` parses as its own commands: they are judged
        _w("coproc", assignments=True),
        _w("time", "-f --format -o --output",
           "-p -a -v -q --append --verbose --quiet --portability", assignments=True),
        _w("command", "", "-p", no_command=frozenset({"-v", "-V"})),
        _w("builtin"),
        _w("exec", "-a", "-c -l"),
        _w("stdbuf", "-i -o -e --input --output --error"),
        _w("ionice", "-c --class -n --classdata", "-t --ignore",
           no_command=frozenset({"-p", "--pid", "-P", "--pgid", "-u", "--uid"})),
        _w("setsid", "", "-c --ctty -f --fork -w --wait"),
        _w("xargs",
           "-I -L -n -P -s -d -E -a --arg-file --delimiter --max-args --max-procs --max-chars "
           "--max-lines --process-slot-var --replace --eof",
           "-0 --null -r --no-run-if-empty -t --verbose -p --interactive -x --exit -o "
           "--open-tty -i -l -e"),
        _w("sudo",
           "-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role "
           "-t --type -T --command-timeout -U --other-user",
           "-A --askpass -b --background -E --preserve-env -H --set-home -i --login -n "
           "--non-interactive -P --preserve-groups -S --stdin -s --shell -B --bell -N "
           "--no-update -R",
           no_command=frozenset({"-e", "--edit", "-l", "--list", "-v", "--validate", "-k",
                                 "--reset-timestamp", "-K", "--remove-timestamp", "-V"}),
           assignments=True, transparent=False),
        _w("doas", "-u -C", "-n -s -L", transparent=False),
        _w("chroot", "--userspec --groups", "--skip-chdir", positional=1, transparent=False),
        # A multi-call binary runs its first word as an applet, its own build of it.
        _w("busybox", no_command=frozenset({"--list", "--list-full", "--install", "--help"}),
           transparent=False),
        _w("toybox", no_command=frozenset({"--help", "--version", "--long"}),
           transparent=False),
        # `jobs -x COMMAND` runs it (without -x, `jobs` runs nothing: `unwrap` checks).
        _w("jobs", "", "-x -l -p -n -r -s"),
        _w("taskset", "", "-a --all-tasks -c --cpu-list", positional=1,
           no_command=frozenset({"-p", "--pid", "-h", "--help", "-V", "--version"})),
        _w("flock", "-w --wait --timeout -E --conflict-exit-code",
           "-s --shared -x --exclusive -e -u --unlock -n --nb --nonblock -o --close -F "
           "--no-fork --verbose", positional=1,
           scripts=frozenset({"-c", "--command"}),
           no_command=frozenset({"-h", "--help", "-V", "--version"})),
        _w("setpriv",
           "--ambient-caps --bounding-set --groups --inh-caps --rgid --egid --regid --ruid "
           "--euid --reuid --securebits --pdeathsig --selinux-label --apparmor-profile "
           "--landlock-access --landlock-rule --seccomp-filter",
           "--clear-groups --init-groups --keep-groups --nnp --no-new-privs --reset-env",
           no_command=frozenset({"-d", "--dump", "-h", "--help", "-V", "--version"}),
           transparent=False),
        _w("unshare",
           "--propagation --setgroups -R --root -w --wd -S --setuid -G --setgid --map-user "
           "--map-group --map-users --map-groups --monotonic --boottime",
           "-m --mount -u --uts -i --ipc -n --net -p --pid -U --user -C --cgroup -T --time "
           "-f --fork -r --map-root-user -c --map-current-user --kill-child --mount-proc "
           "--map-auto --keep-caps",
           no_command=frozenset({"-h", "--help", "-V", "--version"}),
           shell="empty", transparent=False),
        _w("chrt", "-T --sched-runtime -P --sched-period -D --sched-deadline",
           "-a --all-tasks -b --batch -d --deadline -f --fifo -i --idle -o --other -r --rr "
           "-R --reset-on-fork -v --verbose", positional=1,
           no_command=frozenset({"-p", "--pid", "-m", "--max", "-h", "--help", "-V",
                                 "--version"})),
        # A resource's short option takes its value attached only (`-n10`; `-n` shows it).
        _w("prlimit",
           "-o --output -c -d -e -f -i -l -m -n -q -r -s -t -u -v -x -y",
           "-c --core -d --data -e --nice -f --fsize -i --sigpending -l --memlock -m --rss "
           "-n --nofile -q --msgqueue -r --rtprio -s --stack -t --cpu -u --nproc -v --as "
           "-x --locks -y --rttime --noheadings --raw --verbose",
           no_command=frozenset({"-p", "--pid", "-h", "--help", "-V", "--version"})),
        _w("setarch", "",
           "-v --verbose -3 --3gb -B --32bit -F --fdpic-funcptrs -I --short-inode -L "
           "--addr-compat-layout -R --addr-no-randomize -S --whole-seconds -T "
           "--sticky-timeouts -X --read-implies-exec -Z --mmap-page-zero --uname-2.6",
           positional=1, shell="empty",
           no_command=frozenset({"--list", "-h", "--help", "-V", "--version"})),
        _w("strace", "-e -o -p -s -a -b -E -I -O -P -S -U -X -u",
           "-c -C -d -D -f -ff -F -i -k -n -q -qq -r -t -tt -ttt -T -v -w -x -xx -y -yy -z "
           "-Z", no_command=frozenset({"-h", "-V"}), transparent=False),
        # The dynamic loader (`ld-linux-x86-64.so.2`, any spelling: `is_loader`).
        _w("ld.so",
           "--library-path --inhibit-rpath --audit --preload --argv0 --glibc-hwcaps-prefix "
           "--glibc-hwcaps-mask",
           "--inhibit-cache",
           no_command=frozenset({"--list", "--verify", "--help", "--version",
                                 "--list-tunables", "--list-diagnostics"})),
        _w("script", "-E --echo -B --log-io -I --log-in -O --log-out -T --log-timing -m "
           "--logging-format -o --output-limit",
           "-a --append -e --return -f --flush -q --quiet",
           scripts=frozenset({"-c", "--command"}), shell="alone",
           no_command=frozenset({"-h", "--help", "-V", "--version"})),
        _w("su", "-g --group -G --supp-group -w --whitelist-environment",
           "- -f --fast -l --login -m -p --preserve-environment -P --pty",
           scripts=frozenset({"-c", "--command", "-C", "--session-command"}),
           refused=frozenset({"-s", "--shell"}), positional=1, shell="args",
           no_command=frozenset({"-h", "--help", "-V", "--version"}), transparent=False),
    )
}  # fmt: skip
if set(WRAPPERS) != WRAPPER_NAMES:  # exec's pre-check reads the names from _first_word
    raise AssertionError("WRAPPERS and _first_word.WRAPPER_NAMES differ")
# What every name the judge unwraps looks like (`ENV`, `Bash`, a Cyrillic e in `env`): on a
# case-insensitive file system (macOS) it runs the command it looks like. (git is not one:
# a rule naming git compares a lookalike itself, as a perhaps; nor is a builtin such as
# `mapfile`, which bash finds by its exact name only.)
_LOOKALIKES: Final = {skeleton(name): name for name in UNWRAPPED}
# The doubt on every script given to zsh: it is judged as bash, but zsh reads words bash
# does not (`noglob git push`, `nocorrect`, `repeat 2 git push`, `- git push`, `=git`: each
# runs git, and a bash reading sees another command).
NOT_EXACTLY_BASH: Final = "zsh is not bash: its script is judged as bash, which it may not be"
# An interactive shell runs what no command names before each prompt and at its start.
RUNS_PROMPTS: Final = (
    "is interactive: it runs PROMPT_COMMAND, the file ENV names and the substitutions of"
    " its prompts, set here and not judged"
)
# What another shell than bash reads otherwise (dash has no `$'...'`: a string bash reads
# as one may end early for it, the rest of the line run as commands).
NOT_BASH_QUOTING: Final = (
    "is not bash: its script holds quoting only bash reads so ($'...', $\"...\")"
)


def _bash_only_quoting(script: str) -> bool:
    """Whether `$'` or `$"` stands in a script outside single quotes (`grep 'x$'` is
    plain text), where bash reads it as a quote another shell may not. Inside double
    quotes too: a `$(...)` there begins new quoting."""
    if "$'" not in script and '$"' not in script:
        return False
    index, single, double = 0, False, False
    while index < len(script) - 1:
        char = script[index]
        if single:
            single = char != "'"
        elif char == "\\":
            index += 1
        elif char == "$" and script[index + 1] in "'\"":
            return True
        elif char == '"':
            double = not double
        elif char == "'" and not double:
            single = True
        index += 1
    return False


# `mapfile -C CALLBACK` (`readarray` too) and `compgen -C COMMAND` run a string as code.
RUNS_A_STRING: Final = "-C runs a string as code, which is not judged"
_RUNS_A_STRING_WITH_C: Final = frozenset({"mapfile", "readarray", "compgen"})
# GNU xargs' optional-value short options: `-i[R]`, `-l[N]`, `-e[EOF]` never take the next word.


@attrs.frozen
class View:
    """The words a rule is matched against: the command as written, or as unwrapped.
    `exact`: an allow rule may match it too (forbid and prompt rules see every view)."""

    __repr__ = fields_repr

    words: tuple[Word, ...]
    exact: bool
    via: str = ""  # what unwrapping led here ("env", "sudo", "base name", "git options")


@attrs.frozen
class Carried:
    """A script a command carries, to be parsed and judged in turn; `script` None when it is
    not known until run time."""

    __repr__ = fields_repr

    script: str | None
    origin: str


@attrs.frozen
class Unwrapped:
    __repr__ = fields_repr
    views: tuple[View, ...]
    carried: tuple[Carried, ...] = ()
    more: tuple[tuple[tuple[Word, ...], str], ...] = ()  # further commands (find -exec)
    doubts: tuple[str, ...] = ()
    carrier: bool = False  # the command only runs the scripts it carries
    unallowable: tuple[str, ...] = ()  # what keeps an allow rule from allowing it
    # Doubts about what git does, which only a rule naming git can care about (exec's
    # pre-check does not look into git for other rules).
    git_doubts: tuple[str, ...] = ()
    # Doubts about an interactive shell, which count only where the script or argv sets
    # what such a shell runs by itself (`_judge`: PROMPT_COMMAND, ENV, a prompt that
    # expands): `stockade run bash -i` is ordinary work.
    prompt_doubts: tuple[str, ...] = ()


def name_of(word: Word) -> str | None:
    """The command a word names: its base name, when the word is known."""
    if not word.known or word.value is None:
        return None
    return word.value.rpartition("/")[2] if "/" in word.value else word.value


def _partly_known_base_name(word: Word) -> Word | None:
    """What is known of the base name of a path not known until run time (`/usr/bin/g?t`,
    `"$D"/git`): the known start past its last `/`, the known end past its last `/`."""
    if word.splat or ("/" not in word.head and "/" not in word.tail):
        return None
    tail = word.tail.rpartition("/")[2]
    if "/" in word.tail:  # `/usr/*/git`, `"$D"/git`: the base name is known
        return Word(word.text, tail, tail, tail)
    head = word.head.rpartition("/")[2]
    if word.value is not None:  # a glob (`/usr/bin/g?t`): the glob's base name
        return Word(word.text, word.value.rpartition("/")[2], head, tail, glob=True)
    return Word(word.text, None, head, tail)  # an expansion in the base name


def _may_be_unwrapped(word: Word) -> str | None:
    """The command names the judge would look inside (a wrapper, a shell, `eval`) that a
    word known only in part may turn out to be, in any case or through a lookalike letter,
    for a person (`"$D"/ENV`, `"$D"/` before env spelt with a Cyrillic e); None for none."""
    fold = str.lower if (word.head + word.tail).isascii() else skeleton
    head, tail = fold(word.head), fold(word.tail)
    names = [
        name
        for name in sorted(UNWRAPPED, key=lambda name: (len(name) < 2, name))
        if (name.startswith(head) or head.startswith(name))
        and (name.endswith(tail) or tail.endswith(name))
    ]
    if not names:
        return None
    return ", ".join(names[:3]) + (" or another wrapper or shell" if len(names) > 3 else "")


_GLOB: Final = frozenset("*?[")
RUNS_A_LINK: Final = (
    "runs the program a kernel link leads to (a process's executable, an open file): it"
    " may be a wrapper or a shell, whose command is not judged"
)


def _may_run_a_link(word: Word) -> bool:
    """Whether a command word may run what a kernel link leads to (`/proc/self/exe`,
    `/dev/fd/3`, `/proc/*/exe`, `/proc/"$P"/exe`, `"$D"/3`), a program its spelling does
    not name."""
    if word.splat:
        return False  # any words: every rule may match already
    if word.known and word.value is not None:
        return runs_a_link(word.value)
    if word.value is not None:  # a glob: its components may spell a link
        if past_a_link(word.value, glob=True) == "":
            return True
        parts = word.value.split("/")
        return len(parts) in (4, 6) and all(
            part == name or not _GLOB.isdisjoint(part)
            for part, name in ((parts[0], ""), (parts[1], "proc"), (parts[-1], "exe"))
        )
    base = word.tail.rpartition("/")[2]  # an expansion before its known end
    return "/" in word.tail and (base in ("exe", *LINK_ENDS) or base.isdigit())


def _may_be_git(word: Word) -> bool:
    """Whether a command word known only in part may be git, in any case."""
    head, tail = word.head, word.tail
    fold = str.lower if (head + tail).isascii() else skeleton
    head, tail = fold(head), fold(tail)
    return ("git".startswith(head) or head.startswith("git")) and (
        "git".endswith(tail) or tail.endswith("git")
    )


def unwrap(words: Sequence[Word], stdin: Stdin | None = None) -> Unwrapped:
    views: list[View] = [View(tuple(words), True)]
    carried: list[Carried] = []
    more: list[tuple[tuple[Word, ...], str]] = []
    doubts: list[str] = []
    unallowable: list[str] = []
    git_doubts: list[str] = []
    prompt_doubts: list[str] = []
    carrier = False
    current = tuple(words)
    exact = True
    for _ in range(_UNWRAP_DEPTH):
        if not current:
            break
        first = current[0]
        name = name_of(first)
        if _may_run_a_link(first):  # `/proc/self/exe -c 'rm -rf ~'` runs the shell
            doubts.append(f"{first.text} {RUNS_A_LINK}")
        if name is None:
            based_word = _partly_known_base_name(first)
            if based_word is not None:  # `/usr/bin/g?t`: perhaps git
                views.append(View((based_word, *current[1:]), False, "base name"))
            if not first.splat and _may_be_git(based_word or first):
                # `/usr/bin/g?t -C . push -f`: git's global options skipped as for git.
                skipped = _git_without_options((based_word or first, *current[1:]))
                views.append(View(skipped, False, "git options"))
            runner = None if first.splat else _may_be_unwrapped(based_word or first)
            if runner is not None:  # `"$W" git push -f`, `bas? -c '...'`: not judged
                doubts.append(
                    f"{first.text} is known only at run time and may be {runner},"
                    " whose command is not judged"
                )
            break
        based = current
        if first.value is not None and "/" in first.value:
            directory = first.value.rpartition("/")[0] or "/"
            based = (Word.exact(name, text=first.text), *current[1:])
            views.append(View(based, exact and directory in SYSTEM_DIRS, "base name"))
        if name not in UNWRAPPED:
            # An ASCII name's skeleton is its lower case: no unicodedata for the common word.
            looks_like = _LOOKALIKES.get(name.lower() if name.isascii() else skeleton(name))
            if looks_like is not None:
                doubts.append(f"{name} only looks like {looks_like}, which it may run")
                name, exact = looks_like, False
                current = (Word.exact(name, text=first.text), *current[1:])
                views.append(View(current, False, "lookalike"))
        if name == "coproc" and any(w.value in ("{", "(") for w in current[1:3]):
            # tree-sitter reads `coproc NAME { ...; }` as a command of words: not exact.
            doubts.append("coproc with a compound command")
            break
        wrapper = WRAPPERS.get("ld.so" if is_loader(name) else name)
        if name == "jobs" and not _jobs_runs(current[1:]):
            wrapper = None  # `jobs %1` lists a job
        if wrapper is not None:
            inner, problem = _strip(wrapper, current[1:])
            if problem is not None:
                doubts.append(f"{name}: {problem}")
                break
            if _changes_environment(wrapper, current[1 : len(current) - len(inner)]):
                unallowable.append(f"{name} changes the environment of the command it runs")
            if not inner:
                break
            if name == "xargs":  # the words it reads are appended, unknown
                inner = (*inner, Word.unknown("<words read by xargs>"))
            exact = exact and wrapper.transparent
            current = inner
            views.append(View(current, exact, name))
            continue
        if (name.lower() if name.isascii() else skeleton(name)) == "git":
            # By its base name (`/usr/bin/git -C . push -f`) and in any case (`GIT`), as
            # forbid and prompt rules see the command itself.
            views.append(View(_git_without_options(based), False, "git options"))
            if _git_config_runs_more(based[1:]):
                git_doubts.append(GIT_CONFIG_RUNS_MORE)
            plain = _git_without_options(based)
            if _git_send_pack_forces(plain[1:]):
                git_doubts.append("git send-pack may force a push, as `git push -f` does")
        elif (shell := shell_of(name)) is not None:
            if shell != name:  # `rbash`, `bash5.2`: a rule naming bash meets it too
                views.append(View((Word.exact(shell, text=first.text), *current[1:]), False))
            script, problem, reads_stdin = _shell_script(current[1:])
            if _sources_a_file(current[1:]):
                doubts.append(f"{name} sources the file its --rcfile names: it is not judged")
            if _interactive(current[1:]):
                prompt_doubts.append(f"{name} -i {RUNS_PROMPTS}")
            if problem is not None:
                doubts.append(f"{name}: {problem}")
            elif script is not None:
                carried.append(Carried(script.value if script.known else None, f"{name} -c"))
                carrier = True
            elif reads_stdin and stdin is not None and stdin.kind != "file":
                carrier = True
                if stdin.kind == "pipe":
                    doubts.append(f"{name} reads its script from a pipe: what it runs is unknown")
                elif stdin.body is not None:
                    text = stdin.body.value if stdin.body.known else None
                    carried.append(Carried(text, f"{name} <<{stdin.kind}"))
            if shell in ZSHES and carried:
                doubts.append(NOT_EXACTLY_BASH)
            elif shell not in BASHES and any(
                c.script is not None and _bash_only_quoting(c.script) for c in carried
            ):
                doubts.append(f"{name} {NOT_BASH_QUOTING}")
        elif name in OTHER_SHELLS and len(current) > 1:
            doubts.append(f"{name} runs a script in another language than bash")
        elif name == "eval":
            arguments = current[1:]
            if arguments and arguments[0].known and arguments[0].value == "--":
                arguments = arguments[1:]  # eval takes `--` as the end of its options
            known = all(w.known for w in arguments)
            joined = " ".join(w.value or "" for w in arguments) if known else None
            carried.append(Carried(joined, "eval"))
            carrier = True
        elif name == "trap" and len(current) - _double_dash(current[1:2]) > 2:
            action = current[1 + _double_dash(current[1:2])]
            if not (action.known and action.value in ("-", "")):
                carried.append(Carried(action.value if action.known else None, "trap"))
        elif name in ("source", "."):
            doubts.append(f"`{name}` runs a file in this shell: its commands are not judged")
        elif name == "alias" and any(w.value is None or "=" in w.value for w in current[1:]):
            doubts.append("an alias definition changes what later words mean")
        elif name == "fc" and not _lists_history(current[1:]):
            doubts.append("`fc` runs a command from the history, which is not judged")
        elif name == "history" and _gives_an_option(current[1:], "s"):
            doubts.append("`history -s` makes a history entry a later `fc` runs")
        elif name == "hash" and _gives_an_option(current[1:], "p"):
            # `hash -p /bin/rm ls; ls -rf /` runs rm as `ls` (confirmed in bash).
            doubts.append("`hash -p` changes what a later command name runs")
        elif name == "find":
            more += _find_exec(current[1:])
        elif name in _RUNS_A_STRING_WITH_C:
            if _gives_an_option(current[1:], "C"):
                doubts.append(f"{name} {RUNS_A_STRING}")
            if name in _ASSIGNS:
                unallowable.append(f"{name} assigns variables")
        elif name in _ASSIGNS or (name == "printf" and _sets_a_variable(current[1:2])):
            unallowable.append(f"{name} assigns variables")
        break
    else:
        doubts.append(f"wrappers nested deeper than {_UNWRAP_DEPTH}")
    return Unwrapped(
        tuple(views),
        tuple(carried),
        tuple(more),
        tuple(doubts),
        carrier,
        tuple(unallowable),
        tuple(git_doubts),
        tuple(prompt_doubts),
    )


def _double_dash(first: Sequence[Word]) -> int:
    return 1 if first and first[0].known and first[0].value == "--" else 0


def _jobs_runs(words: Sequence[Word]) -> bool:
    """Whether `jobs` is given `-x` (or may be: a word known at run time), which runs the
    rest of its words as a command."""
    for word in words:
        if not word.known or word.value is None:
            return True
        if word.value == "--" or word.value[:1] != "-":
            return False
        if "x" in word.value:
            return True
    return False


def _lists_history(words: Sequence[Word]) -> bool:
    """Whether `fc` only lists the history (`-l`): without it, it runs a command from it."""
    for word in words:
        if not word.known or word.value is None or word.value == "--":
            return False
        if word.value[:1] != "-" or word.value[1:2].isdigit():
            return False
        if "l" in word.value[1:] and "s" not in word.value and "e" not in word.value:
            return True
    return False


# Builtins that set variables named by their words (`read PATH`, `printf -v PATH`).
_ASSIGNS: Final = frozenset({"read", "mapfile", "readarray", "getopts"})


def _gives_an_option(words: Sequence[Word], letter: str) -> bool:
    """Whether a builtin's options may hold `-LETTER` (`-C cb`, `-tC cb`, a word known only
    at run time), up to `--`; option values too (`-d -C`): a doubt too many is only a
    question."""
    for word in words:
        if not word.known or word.value is None:
            return True
        if word.value == "--":
            return False
        if word.value[:1] == "-" and letter in word.value[1:]:
            return True
    return False


def _sets_a_variable(first: Sequence[Word]) -> bool:
    return any(w.value is None or w.value.startswith("-v") for w in first)


# env's options that change nothing of the environment; any other (an assignment, `-u`,
# `-i`, `-`) makes `env ... git status` another command than `git status`.
_ENV_HARMLESS: Final = frozenset({"-0", "--null", "-v", "--debug", "--"})


def _changes_environment(wrapper: Wrapper, options: Sequence[Word]) -> bool:
    if wrapper.name == "env":
        return any(w.value not in _ENV_HARMLESS for w in options)
    if wrapper.name == "exec":  # `exec -c` clears the environment
        return any(
            w.value is None or (w.value[:1] == "-" and w.value[1:2] != "-" and "c" in w.value)
            for w in options
        )
    return False


def _strip(wrapper: Wrapper, words: Sequence[Word]) -> tuple[tuple[Word, ...], str | None]:
    """The command after the wrapper's options, operands and assignments; or why not known."""
    index = 0
    positional = wrapper.positional
    while index < len(words):
        word = words[index]
        if not word.known or word.value is None:
            return (), f"the word {word.text} is not known until run time"
        value = word.value
        if value == "--":
            index += 1
            break
        if value in wrapper.no_command:
            return (), None
        option = value.split("=", 1)[0]
        if (
            value[:1] == "-"
            and value[1:2] not in ("-", "")
            and f"-{value[-1]}" in wrapper.scripts
            and all(f"-{letter}" in wrapper.flags for letter in value[1:-1])
        ):
            option = value = f"-{value[-1]}"  # `script -qc SCRIPT`: flags, then the script's
        if option in wrapper.scripts:
            # The script runs as `$SHELL -c SCRIPT`: judged as `sh -c` would be.
            if "=" in value and option.startswith("--"):
                script = Word.exact(value.split("=", 1)[1], text=word.text)
            elif value == option and index + 1 < len(words):
                script = words[index + 1]
            else:
                return (), f"an option the judge does not know ({value})"
            return (_SH, Word.exact("-c"), script), None
        if value in wrapper.refused or value.split("=", 1)[0] in wrapper.refused:
            return (), f"{value} makes the command unknowable"
        if (value.startswith("-") and value != "-") or (value == "-" and "-" in wrapper.flags):
            consumed = _option(wrapper, value, words, index)
            if consumed is None:
                return (), f"an option the judge does not know ({value})"
            index += consumed
            continue
        if wrapper.assignments and "=" in value and value.split("=", 1)[0].isidentifier():
            index += 1
            continue
        if positional or wrapper.shell == "alone":  # `script LOG -c ...`: options permute
            positional -= 1
            index += 1
            continue
        break
    if wrapper.shell == "alone":
        return (_SH,), None
    if wrapper.shell == "args" or (wrapper.shell == "empty" and index == len(words)):
        return (_SH, *words[index:]), None
    return tuple(words[index:]), None


# The shell a wrapper runs (`su`, `script`, `unshare` with no command): `$SHELL`, judged as sh.
_SH: Final = Word.exact("sh", text="<the shell it runs>")


def _option(wrapper: Wrapper, value: str, words: Sequence[Word], index: int) -> int | None:
    """How many words the option at `index` takes up, or None when it is not known."""
    if value in wrapper.flags:
        return 1
    if value in wrapper.values:
        return 2 if index + 1 < len(words) else None
    if value.startswith("--"):
        name = value.split("=", 1)[0]
        return 1 if "=" in value and (name in wrapper.values or name in wrapper.flags) else None
    if wrapper.numeric and value[1:].isdigit():
        return 1
    if value[:2] in wrapper.values:
        return 1  # an attached value: -n10, -oL
    if wrapper.name == "xargs" and value[:2] in ("-i", "-l", "-e"):
        return 1
    if all(f"-{letter}" in wrapper.flags for letter in value[1:]):
        return 1
    return None


_GIT_VALUES: Final = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
     "--list-cmds", "--attr-source", "--exec-path"}
)  # fmt: skip
_GIT_FLAGS: Final = frozenset(
    {"-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects",
     "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
     "--no-optional-locks", "--no-lazy-fetch", "--no-advice", "--exec-path"}
)  # fmt: skip


# What git reads as its subcommand, written as an option (git.c, for legacy reasons):
# `git --version push -f` runs `git version push -f`, which pushes nothing.
_GIT_COMMAND_OPTIONS: Final = {
    "--version": "version",
    "-v": "version",
    "--help": "help",
    "-h": "help",
}
# What prints a path and exits before any subcommand (git.c's handle_options).
_GIT_PRINT_AND_EXIT: Final = frozenset({"--html-path", "--man-path", "--info-path"})


# Configuration given on git's command line that changes what its subcommand does: an
# alias runs other words (`-c alias.ship='push -f'`), a push refspec or a mirror forces.
GIT_CONFIG_RUNS_MORE: Final = (
    "git -c gives an alias or a push configuration: what the subcommand does is not judged"
)


def _git_config_runs_more(words: Sequence[Word]) -> bool:
    """Whether git's global options (`-c KEY=VALUE`, `--config-env=KEY=ENV`) set an alias,
    a remote's push refspec or mirror (a key is any case), or one not known until run time."""
    index = 0
    while index < len(words):
        word = words[index]
        value = word.value if word.known else None
        if value is None or not value.startswith("-"):
            return False
        name = value.split("=", 1)[0]
        if name in ("-c", "--config-env"):
            given = words[index + 1] if "=" not in value and index + 1 < len(words) else None
            setting = value.split("=", 1)[1] if "=" in value else None
            if given is not None:
                setting = given.value if given.known else None
            if setting is None:
                return True
            key = setting.split("=", 1)[0].lower()
            if key.startswith("alias.") or (
                key.startswith("remote.") and key.endswith((".push", ".mirror"))
            ):
                return True
            index += 1 if "=" in value else 2
            continue
        index += 2 if name in _GIT_VALUES and "=" not in value and name != "--exec-path" else 1
    return False


def _git_send_pack_forces(words: Sequence[Word]) -> bool:
    """`git send-pack --force` (or a `+` refspec, or words known at run time): the
    plumbing under `git push`, which the force-push rule does not name."""
    if not words or not words[0].known or words[0].value != "send-pack":
        return False
    return any(
        not w.known or w.value is None or w.value == "--force" or w.value.startswith("+")
        for w in words[1:]
    )


def _git_without_options(words: tuple[Word, ...]) -> tuple[Word, ...]:
    """`git -C dir push -f` as `git push -f`, for forbid and prompt rules: the global options
    before git's subcommand skipped. An option it does not know leaves an unknown word.
    `--version`/`--help` (`-v`/`-h`) are git's `version`/`help` subcommands, as git reads
    them; a path-printing option ends the command there (git exits)."""
    index = 1
    while index < len(words):
        word = words[index]
        value = word.value if word.known else None
        if value is None:
            return (words[0], Word.unknown(word.text))
        if not value.startswith("-"):
            break
        if value in _GIT_COMMAND_OPTIONS:
            command = Word.exact(_GIT_COMMAND_OPTIONS[value], text=word.text)
            return (words[0], command, *words[index + 1 :])
        if value in _GIT_PRINT_AND_EXIT:
            return (words[0], word)
        name = value.split("=", 1)[0]
        if name in _GIT_VALUES and "=" not in value and name != "--exec-path":
            index += 2
        elif name in _GIT_VALUES or name in _GIT_FLAGS:
            index += 1
        else:
            return (words[0], Word.unknown(word.text))
    return (words[0], *words[index:])


# bash's options naming a file it sources before its script (an interactive bash's).
_SOURCED_FILE_OPTIONS: Final = frozenset({"--rcfile", "--init-file"})
# A script file that is the shell's own standard input, as `normal_path` spells it.
_STDIN_PATHS: Final = frozenset(
    {"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0"}
)


def _interactive(words: Sequence[Word]) -> bool:
    """Whether a shell's options (before its script) make it interactive (`-i`)."""
    for word in words:
        value = word.value if word.known else None
        if value is None or value in ("--", "-") or value[:1] not in "-+":
            return False
        if value[:1] == "-" and value[1:2] != "-" and "i" in value:
            return True
    return False


def _sources_a_file(words: Sequence[Word]) -> bool:
    """Whether a shell's options (before its script) name a file it sources first."""
    for word in words:
        value = word.value if word.known else None
        if value in _SOURCED_FILE_OPTIONS:
            return True
        if value is None or value in ("--", "-") or value[:1] not in "-+":
            return False
    return False


def _shell_script(words: Sequence[Word]) -> tuple[Word | None, str | None, bool]:
    """A shell's `-c` script word, or a problem, and whether it reads its script from
    standard input (no `-c`, no script file)."""
    index = 0
    command_string = False
    reads_stdin = False
    while index < len(words):
        word = words[index]
        if not word.known or word.value is None:
            if command_string:
                break  # the script itself: known or not, the caller says
            return None, f"the option or operand {word.text} is not known until run time", False
        value = word.value
        if value in ("--", "-"):
            index += 1
            break
        if value.startswith("--"):
            index += 2 if value in ("--rcfile", "--init-file") else 1
            continue
        if value[:1] in "-+" and len(value) > 1:
            letters = value[1:]
            command_string = command_string or "c" in letters
            reads_stdin = reads_stdin or "s" in letters
            index += 1 + sum(1 for letter in letters if letter in "oO")
            continue
        break
    operands = words[index:]
    if command_string:
        if not operands:
            return None, "-c without a script", False
        return operands[0], None, False
    operand = operands[0].value if operands else None
    from_stdin = False
    if operand is not None and past_a_link(operand) == "":
        # A descriptor or stdin however spelt (`/dev//stdin`, `/dev/fd/3`): the shell's
        # own standard input is judged as such, any other descriptor cannot be.
        spelt = {normal_path(operand), *collapsed_paths(operand)}
        if spelt.isdisjoint(_STDIN_PATHS):
            return None, f"its script is read from {operand}, which is not known", False
        from_stdin = True
    return None, None, reads_stdin or not operands or from_stdin


def _find_exec(words: Sequence[Word]) -> list[tuple[tuple[Word, ...], str]]:
    """The commands of find's `-exec`/`-execdir`/`-ok`/`-okdir`, `{}` as an unknown word."""
    found: list[tuple[tuple[Word, ...], str]] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word.known and word.value in ("-exec", "-execdir", "-ok", "-okdir"):
            inner: list[Word] = []
            index += 1
            while index < len(words):
                current = words[index]
                if current.known and current.value in (";", "+"):
                    break
                if current.value is None or "{}" in current.value:
                    inner.append(Word(current.text, None, splat=current.splat))
                else:
                    inner.append(current)
                index += 1
            if inner:
                found.append((tuple(inner), f"find {word.value}"))
        index += 1
    return found
