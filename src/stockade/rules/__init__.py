"""Command rules (pure): a rule language over a command's words (forbid, prompt, allow; the
strictest wins), a tree-sitter parse of a bash script into every simple command it runs,
and the verdict, where doubt never allows.

This is the room's public surface; names load on first use, and tree-sitter only when a
script is first judged.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # typing itself is not imported where rules are not judged
if TYPE_CHECKING:
    from ._config import rule_from_mapping as rule_from_mapping
    from ._defaults import DEFAULT_RULES as DEFAULT_RULES
    from ._file import load_rules_file as load_rules_file
    from ._file import read_rules_file as read_rules_file
    from ._file import rules_document as rules_document
    from ._file import rules_from_text as rules_from_text
    from ._first_word import DEFAULT_FIRST_WORDS as DEFAULT_FIRST_WORDS
    from ._first_word import argv_may_apply as argv_may_apply
    from ._first_word import first_words as first_words
    from ._first_word import may_apply as may_apply
    from ._first_word import plain_words as plain_words
    from ._judge import JudgedCommand as JudgedCommand
    from ._judge import Judgement as Judgement
    from ._judge import RuleRef as RuleRef
    from ._judge import Uncertainty as Uncertainty
    from ._parse import MAX_SCRIPT_CHARS as MAX_SCRIPT_CHARS
    from ._rule import Rule as Rule
    from ._ruleset import RuleSet as RuleSet
    from ._ruleset import matches as matches
    from ._words import Decision as Decision
    from ._words import Word as Word
    from ._words import WordPattern as WordPattern
    from .render import deciding_rule as deciding_rule
    from .render import render_forbidden as render_forbidden
    from .render import render_judgement as render_judgement
    from .render import render_refusal as render_refusal
    from .render import render_rules as render_rules

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())
