"""The parse: a bash script read with tree-sitter's bash grammar into every simple command it
holds (wherever it sits), each with its words, where it came from and what feeds it.

tree-sitter is imported here only, on the first parse; nothing else in stockade pays for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

import attrs

from ..reprs import fields_repr
from ._words import Word

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# The longest script judged; a longer one is uncertain as a whole (never allowed).
MAX_SCRIPT_CHARS: Final = 100_000


@attrs.frozen
class Doubt:
    """Something in the script that cannot be judged exactly, and why."""

    __repr__ = fields_repr

    reason: str
    text: str  # the part of the script it is about (cut short)
    origin: str = ""
    # A held substitution's literal, as resolved: when it is a script the judge itself
    # parses (`trap '...$(...)' EXIT`, `bash -c '...'`), its `$(` is seen there.
    literal: str | None = None


@attrs.frozen
class Stdin:
    """Where a command's standard input comes from, when the script says."""

    __repr__ = fields_repr

    kind: str  # "pipe", "heredoc", "herestring", "file"
    body: Word | None = None  # a heredoc's or here-string's text (None for a pipe or file)
    feeders: tuple[Word, ...] = ()  # the commands of `< <(...)`, a pipe by another name


@attrs.frozen
class SimpleCommand:
    """One simple command as written: its words (assignments before it left out), where it
    sits (`in $(...)`, `in function f`, `bash -c`), and what feeds its standard input."""

    __repr__ = fields_repr

    words: tuple[Word, ...]
    text: str
    origin: str
    fed_by: tuple[Word, ...] = ()  # the names of commands piped into it
    stdin: Stdin | None = None


@attrs.frozen
class Parsed:
    """The commands, the doubts, and what keeps an allow rule from allowing the script
    (`unallowable`: an assignment, a redirection to a file): those are certain, not doubts."""

    __repr__ = fields_repr

    commands: tuple[SimpleCommand, ...]
    doubts: tuple[Doubt, ...]
    unallowable: tuple[Doubt, ...] = ()


def brief(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class BashParser:
    """One tree-sitter parser for bash, made on first use and reused by whoever holds it
    (a RuleSet holds one: no module state)."""

    def __init__(self) -> None:
        self._parser: Parser | None = None

    def prepare(self) -> None:
        """Import tree-sitter and make the parser now, not at the first judgement (a
        harness does it when it opens: a call that meets a full descriptor table then
        still judges, and fails for what it runs, not for an import)."""
        self._get()

    def _get(self) -> Parser:
        if self._parser is None:
            import tree_sitter
            import tree_sitter_bash

            self._parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        return self._parser

    def parse(self, script: str, origin: str = "") -> Parsed:
        """Every simple command of `script`, and every doubt about it."""
        if len(script) > MAX_SCRIPT_CHARS:
            reason = f"the script is longer than {MAX_SCRIPT_CHARS:,} characters"
            return Parsed((), (Doubt(reason, brief(script), origin),))
        source = script.encode("utf-8", "surrogateescape")
        tree = self._get().parse(source)
        if tree.root_node.has_error and b"<>" in source:
            # tree-sitter-bash does not know the read-write redirection (`exec 3<>FILE`):
            # parse it as `< ` (the same length, so every node's place is the same), and
            # read every node's text from the script as written (`<>` is then seen).
            alternate = self._get().parse(source.replace(b"<>", b"< "))
            if not alternate.root_node.has_error:
                tree = alternate
        return _Walk(source, origin).run(tree.root_node)


# Node types whose every part the walk understands (a command inside any of them is found
# by the walk, wherever it sits). Any other named node makes the script uncertain.
_KNOWN: Final = frozenset(
    {
        "program", "list", "pipeline", "subshell", "compound_statement", "redirected_statement",
        "negated_command", "if_statement", "elif_clause", "else_clause", "while_statement",
        "for_statement", "c_style_for_statement", "do_group", "case_statement", "case_item",
        "function_definition", "test_command", "declaration_command", "unset_command",
        "command", "command_name", "variable_assignment", "variable_assignments",
        "file_redirect", "heredoc_redirect", "herestring_redirect", "heredoc_body",
        "heredoc_content", "heredoc_start", "heredoc_end", "file_descriptor", "word", "number",
        "string", "string_content", "raw_string", "ansi_c_string", "translated_string",
        "concatenation", "simple_expansion", "expansion", "command_substitution",
        "process_substitution", "arithmetic_expansion", "brace_expression", "variable_name",
        "special_variable_name", "subscript", "array", "comment", "binary_expression",
        "unary_expression", "ternary_expression", "parenthesized_expression",
        "postfix_expression", "test_operator", "extglob_pattern", "regex",
    }
)  # fmt: skip

# Containers a command's standard input passes through unchanged, up to a pipeline.
_STDIN_THROUGH: Final = frozenset(
    {"subshell", "compound_statement", "list", "negated_command", "redirected_statement",
     "do_group", "if_statement", "elif_clause", "else_clause", "while_statement",
     "for_statement", "case_statement", "case_item"}
)  # fmt: skip

# Redirection operators that open a file for writing (`<>` creates it too); a duplication
# (`2>&1`, `>&-`) or `/dev/null` writes no file.
_WRITES: Final = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&", "&>|"})
_NO_FILE: Final = frozenset({"/dev/null"})

# Text that holds a command substitution bash may evaluate later (in a subscript), when
# the parser did not itself read it as one.
_SUBSTITUTION_MARKS: Final = ("$(", "`")
HELD_SUBSTITUTION: Final = "a string holds a command substitution bash may evaluate later"
_ARITHMETIC: Final = "arithmetic on a variable runs any command substitution its value holds"
# tree-sitter reads `$'\\'` as not ended (a `\'` in it), bash as ended: what bash runs
# after it is read as part of the string.
_MISREAD_ANSI_C: Final = "a $'...' string ends where the parser does not see it end"
_PROMPT_EXPANSION: Final = "${...@P} expands a value as a prompt, running what it holds"
# What is set from outside the script's text wherever it stands: the positional
# parameters (a function's or `set --` arguments), `$_`, `[[ =~ ]]`'s matches, `${!1}`.
_TAKEN_IN: Final = re.compile(r"\$\{?!?(?:[0-9@*]|_(?!\w))|BASH_REMATCH|(?<![\w$])_(?!\w)")
# `"$@"`, `"${@:2}"`, `"${a[@]}"`, `"${!a[@]}"`, `"${!prefix@}"`: quoted, still any words.
_SPLATS: Final = re.compile(r"\$(?:@|\{(?:@|!?[A-Za-z_]\w*\[@\]|![A-Za-z_]\w*@))")
_NAME_AT_RUN_TIME: Final = "a variable name known only at run time may hold a subscript to run"
_LITERALS: Final = frozenset(
    {"word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation"}
)
_INSIDE_A_WORD: Final = frozenset({"concatenation", "string", "translated_string"})
_PLAIN_ARITHMETIC: Final = frozenset(
    {"number", "binary_expression", "unary_expression", "ternary_expression",
     "parenthesized_expression", "test_operator"}
)  # fmt: skip
_PLAIN_INDEX: Final = re.compile(r"\s*(\d+|@|\*)\s*")
# `${!x}` (indirection), `${x:n}` (an offset that is not a plain number).
_INDIRECT_OR_OFFSET: Final = re.compile(
    r"\$\{(!([A-Za-z_]\w*|[0-9]+)(\}|\[)|#?[A-Za-z_]\w*(\[[^]]*\])?:(?![-=?+])[^}]*[A-Za-z_$])"
)
_ARITHMETIC_TESTS: Final = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NAME_IN_ARITHMETIC: Final = re.compile(r"[A-Za-z_$`]")
_NAME_TAKERS: Final = frozenset({"read", "mapfile", "readarray", "getopts", "wait", "unset"})
_NAMED_PARTS: Final = frozenset({"variable_name", "variable_assignment", "word"})
_NOT_ARGUMENTS: Final = frozenset(
    {"command_name", "variable_assignment", "file_redirect", "heredoc_redirect",
     "herestring_redirect", "comment"}
)  # fmt: skip

_REDIRECTS: Final = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})

_BRACE_EXPANSION: Final = re.compile(r"\{[^{}\x00]*(,|\.\.)[^{}\x00]*\}")


class _Walk:
    def __init__(self, source: bytes, origin: str) -> None:
        self.source = source
        self.origin = origin
        self.commands: list[SimpleCommand] = []
        self.doubts: list[Doubt] = []
        self.unallowable: list[Doubt] = []
        # Arithmetic over variables: a doubt only where a variable can hold what the
        # script did not write (below, `_takes_in`), or in a carried script, whose
        # variables its caller may have set.
        self.arithmetic: list[Doubt] = []
        self.takes_in = bool(origin)
        self.exec_stdin: Stdin | None = None

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def doubt(self, reason: str, node: Node) -> None:
        self.doubts.append(Doubt(reason, brief(self.text(node)), self._origin(node)))

    def unallow(self, reason: str, node: Node) -> None:
        self.unallowable.append(Doubt(reason, brief(self.text(node)), self._origin(node)))

    def run(self, root: Node) -> Parsed:
        found: list[Node] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_error or node.is_missing:
                what = "missing " + node.type if node.is_missing else "a syntax error"
                self.doubt(f"the script does not parse exactly ({what})", node)
            elif node.is_named and node.type not in _KNOWN:
                self.doubt(f"a shell construct the judge does not know ({node.type})", node)
            else:
                if node.type == "command":
                    found.append(node)
                else:
                    self._changes_commands(node)
                if node.type == "file_redirect" and self._stray_words(node):
                    self.doubt("words after a redirection of a compound command", node)
                if node.type == "ansi_c_string" and not _ends_as_bash_reads(self.text(node)):
                    self.doubt(_MISREAD_ANSI_C, node)
                if node.type == "expansion" and self.text(node).endswith("@P}"):
                    self.doubt(_PROMPT_EXPANSION, node)
                self._evaluated_later(node)
                self._takes_in(node)
            stack.extend(reversed(node.children))
        self.exec_stdin = self._exec_stdin(found)
        for node in found:
            command = self._command(node)
            if command is not None:
                self.commands.append(command)
        if self.takes_in:
            self.doubts += self.arithmetic
        return Parsed(tuple(self.commands), tuple(self.doubts), tuple(self.unallowable))

    def arithmetic_on(self, node: Node) -> None:
        """Arithmetic (or an indirection, a subscript) that reads a variable: bash runs
        a command substitution held in the variable's value (`a[$(...)]`). A literal
        holding `$(` is a doubt already; so only a value the script takes in at run
        time (read from a file, a command's output, a file name) can bring one."""
        if self._substitutes(node) or _TAKEN_IN.search(self.text(node)):
            self.doubt(_ARITHMETIC, node)
        else:
            self.arithmetic.append(Doubt(_ARITHMETIC, brief(self.text(node)), self._origin(node)))

    def _substitutes(self, node: Node) -> bool:
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type in ("command_substitution", "process_substitution"):
                return True
            stack.extend(current.named_children)
        return False

    def _takes_in(self, node: Node) -> None:
        """A variable set from what the script did not write: `read`, `mapfile`,
        `getopts`, `printf -v`, a `for` loop's words (file names), an assignment of an
        expansion or a command's output."""
        kind = node.type
        if kind == "for_statement" and node.child_by_field_name("variable") is not None:
            self.takes_in = True
        elif kind == "variable_assignment":
            value = node.child_by_field_name("value")
            if value is not None and not self._literal_only(value):
                self.takes_in = True
        elif kind == "command":
            name = node.child_by_field_name("name")
            first = self.text(name) if name is not None else ""
            if first in _NAME_TAKERS or first in ("printf", "declare", "local", "typeset"):
                self.takes_in = True

    def _literal_only(self, node: Node) -> bool:
        stack = [node]
        while stack:
            current = stack.pop()
            # An arithmetic expansion's value is a number (what it reads is judged as
            # arithmetic itself): `i=$((i+1))` takes nothing in.
            if current.type in (
                "simple_expansion", "expansion", "command_substitution",
                "process_substitution",
            ):  # fmt: skip
                return False
            stack.extend(current.named_children)
        return True

    def _changes_commands(self, node: Node) -> None:
        """What changes what a later (or this) command does without being a command: a
        variable set or unset (`PATH=.`, `export`, `for PATH in`), or output written to a
        file. An allow rule names a command, not these: they keep the script from allow."""
        kind = node.type
        if kind == "variable_assignment":
            self.unallow("a variable assignment changes what commands do", node)
        elif kind in ("declaration_command", "unset_command"):
            self.unallow(f"`{self.text(node).split()[0]}` changes what commands do", node)
        elif kind == "for_statement" and node.child_by_field_name("variable") is not None:
            self.unallow("a for loop assigns a variable", node)
        elif kind == "file_redirect" and self._writes_a_file(node):
            self.unallow("output redirected to a file", node)

    def _evaluated_later(self, node: Node) -> None:
        """What bash evaluates as code that the parse never sees as a command: a literal
        `$(` or backtick (an array subscript `a[$(...)]` runs it wherever a name or a
        number is evaluated: `$((x))`, `printf -v`, `read`, `test -v`), and arithmetic or a
        variable name that takes a variable's value (which may hold such a subscript)."""
        kind = node.type
        parent = node.parent
        if kind in _LITERALS and (parent is None or parent.type not in _INSIDE_A_WORD):
            literal = self._literal_text(node)
            if any(mark in literal for mark in _SUBSTITUTION_MARKS):
                self.doubts.append(
                    Doubt(
                        HELD_SUBSTITUTION,
                        brief(self.text(node)),
                        self._origin(node),
                        literal=literal,
                    )
                )
        elif kind == "heredoc_body":
            literal = self._heredoc_literal(node)
            if any(mark in literal for mark in _SUBSTITUTION_MARKS):
                self.doubt(HELD_SUBSTITUTION, node)
        elif kind == "arithmetic_expansion" or (
            kind in ("compound_statement", "c_style_for_statement")
            and any(c.type == "((" for c in node.children)
        ):
            if self._takes_a_value(node, skip=("do_group", "compound_statement")):
                self.arithmetic_on(node)
        elif kind == "subscript":
            index = node.child_by_field_name("index")
            if index is not None and not _PLAIN_INDEX.fullmatch(self.text(index)):
                self.arithmetic_on(node)
        elif kind == "expansion" and _INDIRECT_OR_OFFSET.match(self.text(node)):
            self.arithmetic_on(node)
        elif kind == "binary_expression" and parent is not None and parent.type == "test_command":
            operator = node.child_by_field_name("operator")
            double = any(c.type == "[[" for c in parent.children)  # `[`'s -eq reads a number
            arithmetic = operator is not None and self.text(operator) in _ARITHMETIC_TESTS
            if double and arithmetic and self._takes_a_value(node):
                self.arithmetic_on(node)
        elif kind == "unary_expression" and parent is not None and parent.type == "test_command":
            if self.text(node).lstrip().startswith(("-v", "-R")) and self._takes_a_value(node):
                self.doubt(_NAME_AT_RUN_TIME, node)
        elif kind == "declaration_command":
            options = [self.text(c) for c in node.named_children if c.type == "word"]
            if any(o[:1] in "-+" and ("i" in o or "n" in o) for o in options):
                self.doubt("an integer or reference attribute evaluates values later", node)
            if any(c.type not in _NAMED_PARTS for c in node.named_children):
                self.doubt(_NAME_AT_RUN_TIME, node)
        elif kind == "unset_command":
            if any(c.type not in _NAMED_PARTS for c in node.named_children):
                self.doubt(_NAME_AT_RUN_TIME, node)
        elif kind == "command":
            self._names_a_variable(node)

    def _names_a_variable(self, node: Node) -> None:
        """`let EXPR`, and a builtin given a variable's name known only at run time (`read
        "$n"`, `printf -v "$n"`, `test -v "$n"`): bash evaluates a subscript in it."""
        name = node.child_by_field_name("name")
        if name is None:
            return
        first = self.text(name)
        arguments = [c for c in node.children if c.is_named and c.type not in _NOT_ARGUMENTS]
        words = [self.word(c) for c in arguments]
        if first == "let":
            if any(w.value is None or _NAME_IN_ARITHMETIC.search(w.value) for w in words):
                self.arithmetic_on(node)
            return
        takes_names = first in _NAME_TAKERS or (
            first in ("printf", "test", "[") and any(w.value in ("-v", "-R") for w in words)
        )
        if takes_names and any(not w.known for w in words):
            self.doubt(_NAME_AT_RUN_TIME, node)

    def _takes_a_value(self, node: Node, skip: tuple[str, ...] = ()) -> bool:
        """Whether an arithmetic expression reads anything but numbers."""
        stack = list(node.named_children)
        while stack:
            current = stack.pop()
            if current.type in skip:
                continue
            if current.type == "word" and not current.named_children:
                if not self.text(current).isdigit():
                    return True
            elif current.type not in _PLAIN_ARITHMETIC:
                return True
            stack.extend(current.named_children)
        return False

    def _literal_text(self, node: Node) -> str:
        builder = _WordBuilder()
        self._parts(node, builder, quoted=False)
        return "".join(builder.value)

    def _heredoc_literal(self, node: Node) -> str:
        """A heredoc body's text less what tree-sitter parsed in it (its substitutions are
        commands, judged as such); all of it when the heredoc is quoted."""
        redirect = node.parent
        start = None
        if redirect is not None:
            start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
        if start is not None and any(q in self.text(start) for q in "'\"\\"):
            return self.text(node)
        # All the body but its parsed substitutions (judged as commands): tree-sitter
        # leaves a backquoted one unparsed, and in a body of nothing else names no part.
        spans: list[tuple[int, int]] = []
        stack = list(node.children)
        while stack:
            child = stack.pop()
            if child.type == "command_substitution":
                spans.append((child.start_byte - node.start_byte, child.end_byte - node.start_byte))
            else:
                stack.extend(child.children)
        raw = self.source[node.start_byte : node.end_byte]
        for begin, end in sorted(spans, reverse=True):
            raw = raw[:begin] + b"\x00" + raw[end:]
        return raw.decode("utf-8", "surrogateescape")

    def _writes_a_file(self, node: Node) -> bool:
        operator = self._operator(node)
        if operator not in _WRITES:
            return False
        target = node.child_by_field_name("destination")
        if target is None:
            return True
        value = self.word(target).value
        if operator in (">&", "<&") and value is not None and (value == "-" or value.isdigit()):
            return False  # a duplication or a close: `2>&1`, `>&-`
        return value not in _NO_FILE

    def _origin(self, node: Node) -> str:
        steps: list[str] = []
        parent = node.parent
        while parent is not None:
            if parent.type == "command_substitution":
                steps.append("in `...`" if self.text(parent).startswith("`") else "in $(...)")
            elif parent.type == "process_substitution":
                steps.append(f"in {self.text(parent)[:1]}(...)")
            elif parent.type == "function_definition":
                name = parent.child_by_field_name("name")
                steps.append(f"in function {self.text(name) if name is not None else '?'}")
            elif parent.type == "heredoc_body":
                steps.append("in a heredoc")
            parent = parent.parent
        if self.origin:
            steps.append(self.origin)
        return " < ".join(steps)

    def _command(self, node: Node) -> SimpleCommand | None:
        words: list[Word] = []
        previous: Node | None = None
        for child in node.children:
            if previous is not None:
                self._check_gap(previous, child, node)
            previous = child
            kind = child.type
            if not child.is_named:
                if kind == "$" and child.next_sibling is not None:
                    # `$"..."` (a translated string): tree-sitter splits the `$` off.
                    nxt = child.next_sibling
                    if nxt.type == "string" and nxt.start_byte == child.end_byte:
                        continue
                self.doubt(f"an unexpected token {kind!r} in a command", child)
                continue
            if kind in ("variable_assignment", "comment"):
                continue  # an assignment's value is walked for substitutions like any node
            if kind == "command_name":
                inner = child.named_children
                if len(inner) != 1:
                    self.doubt("a command name the judge cannot read", child)
                    words.append(Word.unknown(self.text(child)))
                else:
                    words.append(self.word(inner[0]))
                continue
            if kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                continue  # read by `_stdin`, with the statement's own
            if kind == "number" and self.source[child.end_byte : child.end_byte + 1] in (
                b"<",
                b">",
            ):
                continue  # `exec 0< x`: tree-sitter reads the descriptor as a word
            words.append(self.word(child))
        # tree-sitter hangs the words after a redirection's target on the redirection
        # (`rm -rf >/dev/null ~`): bash reads them as the command's.
        statement = node.parent
        redirects = [c for c in node.children if c.type == "file_redirect"]
        if statement is not None and statement.type == "redirected_statement":
            redirects += [
                r for r in statement.children_by_field_name("redirect") if r.type == "file_redirect"
            ]
        for redirect in sorted(redirects, key=lambda r: r.start_byte):
            targets = redirect.children_by_field_name("destination")
            closes = any(c.type in ("<&-", ">&-") for c in redirect.children)  # no target
            words += [self.word(w) for w in targets[0 if closes else 1 :]]
        if not words:
            return None
        stdin = self._stdin(node)
        fed: list[Word] = []
        if stdin is not None and stdin.kind == "pipe":
            fed += stdin.feeders or list(self._fed_by(node))
        writer = self._writer(node)
        if writer is not None and (stdin is None or stdin.kind == "pipe"):
            # `curl ... > >(sh)`: what writes into a `>(...)` feeds the commands in it.
            stdin = stdin or Stdin("pipe")
            fed += writer
        # `bash <(curl ...)`: what a `<(...)` argument runs feeds the command too.
        for child in node.children:
            if child.type == "process_substitution" and self.text(child).startswith("<"):
                fed += self._names(child)
        fed_by = tuple(_base_name(word) for word in fed)
        return SimpleCommand(tuple(words), self.text(node), self._origin(node), fed_by, stdin)

    def _check_gap(self, before: Node, after: Node, command: Node) -> None:
        """Between two parts of a command only blanks and line continuations may stand; a
        continuation with no blank on either side joins two words into one in bash, which
        tree-sitter reads as two."""
        gap = self.source[before.end_byte : after.start_byte].decode("utf-8", "surrogateescape")
        if not gap:
            return
        joined = gap.replace("\\\n", "")
        if joined.strip(" \t") != "":
            self.doubt("text between words the parser did not account for", command)
        elif not joined and "\\\n" in gap:
            self.doubt("a line continuation inside a word", command)

    def _operator(self, node: Node) -> str:
        """A redirection's operator as written: a `<>` was parsed as `<` followed by a
        space (`BashParser.parse`), which the script as written shows."""
        operator = next((c for c in node.children if not c.is_named), None)
        if operator is None:
            return ""
        if operator.type == "<" and self.source[operator.end_byte : operator.end_byte + 1] == b">":
            return "<>"
        return operator.type

    def _redirect(self, node: Node) -> Stdin | None:
        if node.type == "heredoc_redirect":
            return Stdin("heredoc", self._heredoc(node))
        if node.type == "herestring_redirect":
            body = node.named_children[-1] if node.named_children else None
            return Stdin("herestring", self.word(body) if body is not None else None)
        operator = self._operator(node)
        descriptor = node.child_by_field_name("descriptor")
        number = self.text(descriptor) if descriptor is not None else self._number_before(node)
        reads = operator in ("<", "<>") and number in ("", "0")
        if not reads:
            return None
        target = node.child_by_field_name("destination")
        if target is not None and target.type == "process_substitution":
            return Stdin("pipe", feeders=tuple(self._names(target)))  # `sh < <(curl ...)`
        return Stdin("file")

    def _stray_words(self, node: Node) -> bool:
        """Whether a redirection holds words past its target that are no simple command's
        (`{ rm; } > x -rf ~`, which bash refuses): a command's are its own (`_command`)."""
        closes = any(c.type in ("<&-", ">&-") for c in node.children)
        if len(node.children_by_field_name("destination")) < (1 if closes else 2):
            return False
        parent = node.parent
        if parent is not None and parent.type == "command":
            return False
        body = parent.child_by_field_name("body") if parent is not None else None
        return not (
            parent is not None
            and parent.type == "redirected_statement"
            and body is not None
            and body.type == "command"
        )

    def _number_before(self, node: Node) -> str:
        """The descriptor tree-sitter left before a redirection as a word of its command
        (`exec 3< x` parses as `exec 3` and `< x`): the digits just before it, when a blank
        stands before them."""
        start = node.start_byte
        while start > 0 and self.source[start - 1 : start].isdigit():
            start -= 1
        if start == node.start_byte or (
            start > 0 and self.source[start - 1 : start] not in b" \t\n"
        ):
            return ""
        return self.source[start : node.start_byte].decode("ascii")

    def _writer(self, node: Node) -> list[Word] | None:
        """The commands that write into the `>(...)` holding `node`, with what feeds them;
        None when `node` is in none."""
        parent = node.parent
        while parent is not None and not (
            parent.type == "process_substitution" and self.text(parent).startswith(">")
        ):
            parent = parent.parent
        if parent is None or parent.parent is None:
            return None
        owner = parent.parent
        if owner.type == "file_redirect" and owner.parent is not None:
            owner = owner.parent
        if owner.type == "redirected_statement":
            body = owner.child_by_field_name("body")
            owner = body if body is not None else owner
        inside = range(parent.start_byte, parent.end_byte)
        writers = list(self._names(owner, leaving=inside))
        if owner.type == "command":
            writers += self._fed_by(owner)
        return writers

    def _heredoc(self, node: Node) -> Word | None:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return Word.exact("")
        text = self.text(body)
        quoted = start is not None and any(q in self.text(start) for q in "'\"\\")
        # Without quotes, `\$` and friends still change the text; with none of them and no
        # expansion, the body is as written.
        plain = not any(c in text for c in "\\$`")
        if quoted or plain:
            return Word.exact(_heredoc_text(text, self._heredoc_end(node)), text="<<heredoc")
        return Word.unknown("<<heredoc")

    def _heredoc_end(self, node: Node) -> str:
        end = next((c for c in node.children if c.type == "heredoc_end"), None)
        return self.text(end) if end is not None else ""

    def _exec_stdin(self, commands: list[Node]) -> Stdin | None:
        """What `exec` without a command redirects the shell's own standard input from
        (`exec < <(curl ...)`, `exec <<< '...'`), for every command after it that reads it
        without a redirect of its own: a pipe of what feeds it, unless it is a file."""
        found: list[Stdin] = []
        for node in commands:
            name = node.child_by_field_name("name")
            if name is None or self.text(name) != "exec":
                continue
            if any(
                c.type not in _REDIRECTS and self.source[c.end_byte : c.end_byte + 1] != b"<"
                for c in node.children[1:]
                if c.is_named
            ):
                continue  # `exec CMD < x`: the command's own standard input
            stdin = self._stdin(node)
            if stdin is not None:
                found.append(stdin)
        if not found:
            return None
        if all(stdin.kind == "file" for stdin in found):
            return Stdin("file")
        return Stdin("pipe", feeders=tuple(w for stdin in found for w in stdin.feeders))

    def _stdin(self, node: Node) -> Stdin | None:
        """Where the command's standard input comes from: the last of its own redirects
        that reads (its statement's are its own too), else the innermost statement around
        it that redirects, else a pipe; bash reads the last one it applied."""
        redirects = [c for c in node.children if c.type in _REDIRECTS]
        statement = node.parent
        if statement is not None and statement.type == "redirected_statement":
            redirects += statement.children_by_field_name("redirect")
        own = [found for r in redirects if (found := self._redirect(r)) is not None]
        if own:
            return own[-1]
        child, parent = node, node.parent
        while parent is not None:
            if parent.type == "redirected_statement" and (
                statement is None or parent.id != statement.id
            ):
                around = parent.children_by_field_name("redirect")
                found_all = [found for r in around if (found := self._redirect(r)) is not None]
                if found_all:
                    return found_all[-1]
            if parent.type == "pipeline" and any(
                c.type in ("|", "|&") and c.end_byte <= child.start_byte for c in parent.children
            ):
                return Stdin("pipe")
            if parent.type not in _STDIN_THROUGH and parent.type != "pipeline":
                return self.exec_stdin
            child, parent = parent, parent.parent
        return self.exec_stdin

    def _fed_by(self, node: Node) -> Iterator[Word]:
        child, parent = node, node.parent
        while parent is not None and parent.type != "pipeline":
            child, parent = parent, parent.parent
        if parent is None:
            return
        owner = parent.parent
        if owner is not None and owner.type == "heredoc_redirect" and owner.parent is not None:
            # `cat <<EOF | sh`: tree-sitter hangs the rest of the pipeline on the heredoc.
            body = owner.parent.child_by_field_name("body")
            if body is not None:
                yield from self._names(body)
        for stage in parent.children:
            if stage.id == child.id:
                return
            if stage.is_named:
                yield from self._names(stage)

    def _names(self, node: Node, leaving: range = range(0)) -> Iterator[Word]:
        """The command names of every command under `node` (but those in `leaving`)."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.start_byte in leaving:
                continue
            if current.type == "command":
                name = current.child_by_field_name("name")
                if name is not None and name.named_children:
                    yield self.word(name.named_children[0])
            stack.extend(current.children)

    # --- words ---------------------------------------------------------------------------

    def _numbers_stay_numbers(self) -> bool:
        """Whether `$$`, `$?`, `$#`, `$!` expand to one word of digits (or nothing) here:
        unless IFS may hold a digit, which the script would name however spelt (bash
        does not take IFS from its environment; a carried script's caller could set it
        unseen)."""
        if self.takes_in:
            return False
        return not may_set(_SETS_IFS, self.source.decode("utf-8", "surrogateescape"))

    def word(self, node: Node) -> Word:
        builder = _WordBuilder()
        self._parts(node, builder, quoted=False)
        return builder.build(self.text(node))

    def _parts(self, node: Node, out: _WordBuilder, *, quoted: bool) -> None:
        kind = node.type
        text = self.text(node)
        if kind == "word" or kind == "number":
            if quoted:
                out.literal(text, quoted=True)
            else:
                _unquoted_word(text, out)
        elif kind == "raw_string":
            out.literal(text[1:-1], quoted=True)
        elif kind in ("string", "translated_string"):
            position = node.start_byte + (2 if text.startswith('$"') else 1)
            end = node.end_byte - 1
            for child in node.children:
                if child.start_byte < position or child.start_byte >= end:
                    continue
                if child.start_byte > position:
                    gap = self.source[position : child.start_byte].decode(
                        "utf-8", "surrogateescape"
                    )
                    out.literal(_double_quoted(gap), quoted=True)
                if child.type == "string_content":
                    out.literal(_double_quoted(self.text(child)), quoted=True)
                else:
                    self._parts(child, out, quoted=True)
                position = child.end_byte
            if position < end:
                gap = self.source[position:end].decode("utf-8", "surrogateescape")
                out.literal(_double_quoted(gap), quoted=True)
        elif kind == "ansi_c_string":
            decoded = ansi_c(text[2:-1])
            if decoded is None:
                out.unknown(splat=False)
            else:
                out.literal(decoded, quoted=True)
        elif kind in ("simple_expansion", "expansion"):
            if text in ("$HOME", "${HOME}") and out.empty:
                out.home()
            elif text in _NUMBERS and self._numbers_stay_numbers():
                out.unknown(splat=False, number=True)
            else:
                out.unknown(splat=not quoted or _SPLATS.match(text) is not None)
        elif kind == "command_substitution":
            out.unknown(splat=not quoted)
        elif kind in ("process_substitution", "arithmetic_expansion"):
            out.unknown(splat=False)
        elif kind == "concatenation":
            position = node.start_byte
            for child in node.children:
                # tree-sitter leaves an unquoted `$$` unnamed (`/tmp/lock.$$`)
                pid = child.type == "$" and self.text(child) == "$$"
                if child.start_byte == position and pid and self._numbers_stay_numbers():
                    out.unknown(splat=False, number=True)
                    position = child.end_byte
                    continue
                if child.start_byte != position or not child.is_named:
                    out.unknown(splat=True)  # something tree-sitter did not name: doubt
                self._parts(child, out, quoted=quoted)
                position = child.end_byte
        else:  # a brace expression, an array, anything else: any words at run time
            out.unknown(splat=True)


class _WordBuilder:
    """Collects a word's parts: literal text (quoted or not), the home directory, unknowns."""

    def __init__(self) -> None:
        self.value: list[str] = []
        self.head: str | None = None  # set when the first unknown part arrives
        self.tail_from = 0  # index in value where the text after the last unknown starts
        self.unquoted: list[str] = []  # unquoted text, quoted parts as \x00 (brace check)
        self.splat = False
        self.has_unknown = False
        self.glob_at: list[int] = []
        self.open_brackets: list[int] = []  # a `[` whose `]` may be in a later part
        self.only_numbers = False  # every unknown part is a number bash sets (`$$`)
        self.is_home = False
        # `~-` (OLDPWD) and a directory stack entry (`~1`, `~+1`, `~-1`): any directory,
        # whatever the script says (the caller's OLDPWD, a `cd`, a `pushd`).
        self.anywhere = False

    @property
    def empty(self) -> bool:
        return not self.value and not self.has_unknown

    def literal(
        self,
        text: str,
        *,
        quoted: bool,
        glob_positions: tuple[int, ...] = (),
        open_brackets: tuple[int, ...] = (),
    ) -> None:
        start = sum(len(piece) for piece in self.value)
        self.glob_at += [start + index for index in glob_positions]
        self.open_brackets += [start + index for index in open_brackets]
        self.value.append(text)
        self.unquoted.append("\x00" if quoted else text)

    def home(self) -> None:
        self.is_home = True
        self.literal("~", quoted=True)

    def unknown(self, *, splat: bool, number: bool = False) -> None:
        if self.head is None:
            self.head = "".join(self.value)
        self.only_numbers = (self.only_numbers or not self.has_unknown) and number
        self.has_unknown = True
        self.splat = self.splat or splat
        self.value.append("")
        self.tail_from = len(self.value)
        self.unquoted.append("\x00")

    def build(self, text: str) -> Word:
        value = "".join(self.value)
        unquoted = "".join(self.unquoted)
        splat = self.splat or bool(_BRACE_EXPANSION.search(unquoted))
        glob_at = sorted(self.glob_at)
        for at in self.open_brackets:  # `[` in one part, `]` in another (`/dat[a]`)
            close = value.rfind("]")
            if close > at:
                glob_at += [at, close]
        glob_at.sort()
        if self.has_unknown:
            # Known: the start before the first unknown or glob, the end after the last.
            head = (self.head or "")[: glob_at[0]] if glob_at else self.head or ""
            tail_start = sum(len(piece) for piece in self.value[: self.tail_from])
            if glob_at:
                tail_start = max(tail_start, glob_at[-1] + 1)
            tail = value[tail_start:]
            return Word(
                text,
                None,
                head,
                tail,
                splat=splat,
                home=self.is_home,
                moved=self.anywhere,
                numbers=self.only_numbers,
            )
        if glob_at:
            head = value[: glob_at[0]]
            tail = value[glob_at[-1] + 1 :]
            return Word(
                text,
                value,
                head,
                tail,
                splat=splat,
                glob=True,
                home=self.is_home,
                moved=self.anywhere,
            )
        return Word(text, value, value, value, splat=splat, home=self.is_home, moved=self.anywhere)


# Special parameters that are always a number: the shell's pid, the argument count, the
# last status, the last background pid.
_NUMBERS: Final = frozenset({"$$", "$#", "$?", "$!", "${$}", "${#}", "${?}", "${!}"})


def _base_name(word: Word) -> Word:
    if word.known and word.value is not None and "/" in word.value:
        return Word.exact(word.value.rpartition("/")[2], text=word.text)
    return word


# A tilde prefix that names a directory of the shell's, not a home: OLDPWD, or an entry of
# the directory stack (`~1`, `~+2`, `~-1`).
_STACK_ENTRY: Final = re.compile(r"-|[+-]?[0-9]+")


def _unquoted_word(text: str, out: _WordBuilder) -> None:
    """An unquoted word: backslashes quote the next character, `*`/`?`/`[...]` glob, and a
    leading `~` (or `~user`) is a home directory."""
    if not any(c in text for c in "\\*?[~{"):  # the common word: plain text
        out.literal(text, quoted=False)
        return
    if out.empty and text.startswith("~"):
        user_end = text.find("/")
        user = text[1:] if user_end < 0 else text[1:user_end]
        if "\\" not in user and not any(c in user for c in "*?["):
            out.is_home = True
            out.anywhere = _STACK_ENTRY.fullmatch(user) is not None
    chars: list[str] = []
    globs: list[int] = []
    opened: list[int] = []
    bracket_from = -1  # where the open `[...]`'s set begins (its first `]` is a member)
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":
                chars.append(text[index + 1])
            index += 2
            continue
        if bracket_from >= 0:
            # Inside `[...]` every character is the set's: the word's known end is only
            # what follows its `]` (`/dat[a]` ends in nothing known, not in `a]`).
            if char == "]" and index > bracket_from:
                bracket_from = -1
            globs.append(len(chars))
        elif char in "*?" or (char == "[" and "]" in text[index + 1 :]):
            globs.append(len(chars))
            if char == "[":
                bracket_from = index + 1 + (text[index + 1 : index + 2] in ("!", "^"))
        elif char == "[":
            opened.append(len(chars))
        chars.append(char)
        index += 1
    out.literal(
        "".join(chars), quoted=False, glob_positions=tuple(globs), open_brackets=tuple(opened)
    )
    if any(c == "\\" for c in text):
        # Escaped braces never expand: the brace check reads the escaped text as quoted.
        out.unquoted[-1] = re.sub(r"\\.", "\x00", text)


def _double_quoted(text: str) -> str:
    """The value of text between double quotes: only `\\$`, `\\``, `\\"`, `\\\\` and a
    line continuation are escapes there."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI_SIMPLE: Final = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
    "e": "\x1b", "E": "\x1b", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_ANSI_ESCAPE: Final = re.compile(
    r"\\(?:x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})|(.))", re.S
)


def sets_variable(*names: str) -> re.Pattern[str]:
    """Where a script may set one of `names`: the name anywhere but as `$NAME` or
    `${NAME...}` (where it is read), attached to an option (`printf -vHOME`, `read
    -aHOME`) or as an assigning default (`${HOME:=/}`)."""
    name = "(?:" + "|".join(names) + ")"
    return re.compile(rf"(?<![$\w#!])(?<!\$\{{){name}\b|-\w*{name}\b|\$\{{{name}:?=")


_ANSI_C_STRING: Final = re.compile(r"\$'((?:[^'\\]|\\.)*)'", re.S)


def may_set(pattern: re.Pattern[str], text: str) -> bool:
    """Whether a script may set a variable `pattern` names: in its text, and in its text
    with quotes removed (`read HO""ME`, `local HO\\ME=/`, `env $'HOM\\x45=/'` set HOME
    in bash)."""
    if pattern.search(text) is not None:
        return True
    if not any(mark in text for mark in "'\"\\"):
        return False
    spelt = _ANSI_C_STRING.sub(lambda m: ansi_c(m.group(1)) or m.group(0), text)
    spelt = spelt.replace("\\\n", "").replace('$"', '"')
    for mark in "'\"\\":
        spelt = spelt.replace(mark, "")
    return pattern.search(spelt) is not None


# Where a script may set IFS, which splits `$$` into words when it holds a digit.
_SETS_IFS: Final = sets_variable("IFS")


def ansi_c(body: str) -> str | None:
    """A `$'...'` string's value, or None for an escape this decoder does not know."""
    unknown = False

    def one(match: re.Match[str]) -> str:
        nonlocal unknown
        hexa, short, long, octal, other = match.groups()
        if hexa or short or long:
            code = int(hexa or short or long, 16)
            if code > 0x10FFFF:
                unknown = True
                return ""
            return chr(code)
        if octal:
            return chr(int(octal, 8) & 0xFF)
        if other in _ANSI_SIMPLE:
            return _ANSI_SIMPLE[other]
        unknown = True  # \cX and anything newer
        return ""

    decoded = _ANSI_ESCAPE.sub(one, body)
    return None if unknown else decoded


def _ends_as_bash_reads(text: str) -> bool:
    """Whether a `$'...'` string as tree-sitter delimits it ends where bash ends it: at
    the first `'` no backslash escapes (a backslash escapes whatever follows it)."""
    index = 2
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "'":
            return index == len(text) - 1
        index += 1
    return False


def _heredoc_text(body: str, end: str) -> str:
    """A heredoc body's text without its closing delimiter line."""
    if end and body.rstrip("\n").endswith(end):
        body = body.rstrip("\n")[: -len(end)]
    return body
