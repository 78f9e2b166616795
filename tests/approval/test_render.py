"""approval.render: what a person is shown is every character that would run."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from stockade.approval._chain import ApprovalRequest
from stockade.approval.answerers import TerminalAnswerer
from stockade.approval.render import (
    JUSTIFICATION_LIMIT,
    TERMINAL_RESET,
    one_line,
    render_prompt,
    terminal_prompt,
    visible,
)
from stockade.vocab import ApprovalPolicy, SandboxMode

HOSTILE = "echo safe\r\x1b[2Krm -rf ~"


def request(command: str = "touch /etc/x", justification: str = "needs it") -> ApprovalRequest:
    return ApprovalRequest(
        session_id="s1",
        command=command,
        justification=justification,
        current_mode=SandboxMode.READ_ONLY,
        requested_mode=SandboxMode.WORKSPACE_WRITE,
        policy=ApprovalPolicy.ASK,
        reason="denied under read-only",
    )


def rows(text: str) -> list[str]:
    return text.split("\n")


def test_a_plain_command_is_shown_as_it_is_with_no_warning():
    prompt = render_prompt(request("ls -la ./src && echo 'a\\nb'"))
    assert "  command:   ls -la ./src && echo 'a\\nb'" in rows(prompt)
    assert "  why:       needs it" in rows(prompt)
    assert "  mode:      read-only -> workspace-write" in rows(prompt)
    assert "warning" not in prompt
    assert prompt.endswith("Allow this command once? [y/N] ")


def test_carriage_return_and_ansi_escapes_are_shown_escaped():
    prompt = render_prompt(request(HOSTILE))
    assert "  command:   echo safe\\r\\x1b[2Krm -rf ~" in rows(prompt)
    assert "\r" not in prompt and "\x1b" not in prompt
    assert (
        "  warning:   the command holds 2 control or invisible characters, shown above as "
        "escapes (\\r, \\xNN, \\uNNNN); read it carefully"
    ) in rows(prompt)


def test_each_kind_of_hidden_character_has_its_escape():
    cases = {
        "\t": "\\t",
        "\r": "\\r",
        "\x08": "\\x08",  # backspace
        "\x00": "\\x00",
        "\x07": "\\x07",  # bell
        "\x1b": "\\x1b",
        "\x7f": "\\x7f",  # DEL
        "\x85": "\\x85",  # C1 next line
        "\x9b": "\\x9b",  # C1 CSI: an escape sequence in one byte
        "\x0b": "\\x0b",
        "\x0c": "\\x0c",
        "\u202e": "\\u202e",  # right-to-left override
        "\u2066": "\\u2066",  # left-to-right isolate
        "\u200b": "\\u200b",  # zero-width space
        "\u200d": "\\u200d",  # zero-width joiner
        "\u2060": "\\u2060",  # word joiner
        "\ufeff": "\\ufeff",  # byte order mark
        "\u00ad": "\\xad",  # soft hyphen
        "\u2028": "\\u2028",  # line separator
        "\u2029": "\\u2029",
        "\u00a0": "\\xa0",  # no-break space
        "\u3000": "\\u3000",
        "\u3164": "\\u3164",  # Hangul filler, drawn blank
        "\u2800": "\\u2800",  # blank braille pattern
        "\ue000": "\\ue000",  # private use
        "\U000e0041": "\\U000e0041",  # tag character
        "\U0010ffff": "\\U0010ffff",  # unassigned
    }
    for char, escape in cases.items():
        shown = visible(f"a{char}b")
        assert shown.lines == (f"a{escape}b",), (hex(ord(char)), shown)
        assert shown.escaped == 1


def test_printable_text_in_any_script_is_shown():
    for text in ("ls ~/Документы", "cat 日本語.txt", "echo 'क्या' café", "grep -r '→' ."):
        assert visible(text).lines == (text,)
        assert visible(text).escaped == 0


def test_a_combining_mark_on_ascii_is_escaped_but_not_inside_a_script():
    # U+0338 overlays a slash: on an ASCII letter it can disguise that letter.
    assert visible("rm -rf x\u0338").lines == ("rm -rf x\\u0338",)
    assert visible("cafe\u0301").lines == ("cafe\\u0301",)
    # A Devanagari virama belongs to its cluster.
    assert visible("\u0915\u094d\u092f").lines == ("\u0915\u094d\u092f",)
    # A pile of marks is cut to two on its base.
    assert visible("\u0915\u0301\u0301\u0301").lines == ("\u0915\u0301\u0301\\u0301",)


def test_a_multi_line_command_is_one_numbered_row_per_line():
    prompt = render_prompt(request("echo a\nrm -rf ~\n"))
    shown = rows(prompt)
    start = shown.index("  command:   (3 lines, shown one per row)")
    assert shown[start + 1 : start + 4] == ["    1 | echo a", "    2 | rm -rf ~", "    3 | "]
    assert shown[start + 4] == "  why:       needs it"


def test_no_line_of_the_text_can_pose_as_a_row_of_the_prompt():
    forged = "true\n  why:       routine cleanup\n  mode:      read-only -> read-only"
    shown = rows(render_prompt(request(forged)))
    assert shown.count("  why:       needs it") == 1
    assert "  why:       routine cleanup" not in shown
    assert "    2 |   why:       routine cleanup" in shown


def test_the_justification_is_cut_with_a_count_and_the_command_never_is():
    long_why = "w" * (JUSTIFICATION_LIMIT + 1234)
    long_command = "x" * 50_000
    prompt = render_prompt(request(long_command, long_why))
    assert f"  command:   {long_command}" in rows(prompt)
    assert f"  why:       {'w' * JUSTIFICATION_LIMIT} … (1234 more characters not shown)" in rows(
        prompt
    )


def test_one_line_shows_newlines_as_escapes():
    assert one_line("a\nb\r") == "a\\nb\\r"
    assert one_line("abc", limit=1) == "a … (2 more characters not shown)"


def test_the_terminal_prompt_resets_the_screen_state_first():
    prompt = terminal_prompt(request(HOSTILE))
    assert prompt.startswith(TERMINAL_RESET)
    assert prompt[len(TERMINAL_RESET) :] == render_prompt(request(HOSTILE)).removeprefix("\n")
    assert "\x1b[0m" in TERMINAL_RESET and "\x1b[r" in TERMINAL_RESET


def unescape(text: str) -> str:
    names = {"t": "\t", "r": "\r"}

    def one(match: re.Match[str]) -> str:
        body = match.group(1)
        return names[body] if body in names else chr(int(body[1:], 16))

    return re.sub(r"\\(t|r|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})", one, text)


HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


@given(st.text(alphabet=st.characters(blacklist_characters="\\"), max_size=200))
def test_any_text_renders_with_nothing_hidden_and_decodes_back(text):
    shown = visible(text)
    for line in shown.lines:
        for char in line:
            category = unicodedata.category(char)
            assert category not in HIDDEN, (hex(ord(char)), line)
            assert category != "Zs" or char == " "
    # Without literal backslashes, every escape is one the renderer made: the rows
    # decode back to exactly the text that would run.
    assert unescape("\n".join(shown.lines)) == text
    prompt = render_prompt(request(text, text))
    assert all(unicodedata.category(char) not in HIDDEN for char in prompt.replace("\n", ""))


async def test_the_terminal_answerer_shows_the_escaped_command():
    class Terminal:
        shown = ""

        def write(self, text):
            Terminal.shown += text

        def flush(self):
            pass

        def readline(self):
            return "n\n"

        def __enter__(self):
            return self

        def __exit__(self, *_exc):
            pass

    answer = await TerminalAnswerer(opener=Terminal).answer(request(HOSTILE))
    assert answer.decision.value == "rejected"
    assert "  command:   echo safe\\r\\x1b[2Krm -rf ~" in rows(Terminal.shown)
    assert "\x1b" not in Terminal.shown
