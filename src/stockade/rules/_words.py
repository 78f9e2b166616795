"""A command's words as the judge knows them (exact, or partly known until run time), the
three-valued answer a pattern gives, and the word patterns rules are written in.
"""

from __future__ import annotations

import enum
import posixpath
import unicodedata
from typing import Final

import attrs

from ..reprs import fields_repr
from ._first_word import collapsed_paths, ends_past_a_link, normal_path, past_a_link


class Decision(enum.StrEnum):
    """What a rule decides; the strictest of several wins (forbid > prompt > allow)."""

    FORBID = "forbid"
    PROMPT = "prompt"
    ALLOW = "allow"

    @property
    def strictness(self) -> int:
        return _STRICTNESS[self]


_STRICTNESS: Final = {Decision.ALLOW: 0, Decision.PROMPT: 1, Decision.FORBID: 2}


class Match(enum.Enum):
    """A pattern's answer: the word certainly matches, certainly not, or only run time can tell."""

    YES = "yes"
    NO = "no"
    MAYBE = "maybe"


@attrs.frozen
class Word:
    """One word of a simple command.

    `value` is the word after quote removal when the script alone fixes it, else None.
    `head` and `tail` are what is known of its start and end either way (equal to
    `value` when known). `splat`: the word may become any number of arbitrary words
    at run time (an unquoted expansion, a brace expansion). `glob`: an unquoted `*`,
    `?` or `[...]` that pathname expansion may replace by file names matching it.
    `home`: the leading `~` stands for the home directory (an unquoted `~`, `$HOME`).
    `moved`: that directory may be anywhere, the script setting HOME (or PWD, OLDPWD).
    """

    __repr__ = fields_repr

    text: str  # as written in the script
    value: str | None
    head: str = ""
    tail: str = ""
    splat: bool = False
    glob: bool = False
    home: bool = False
    # The script may set HOME, PWD or OLDPWD (`HOME=/; rm -rf ~/data`): a home word is
    # then some absolute path, not only the runner's home.
    moved: bool = False
    # Every unknown part is a number bash sets (`/tmp/lock.$$`): no `/`, no `..` in it.
    numbers: bool = False

    @classmethod
    def exact(cls, value: str, *, text: str | None = None, home: bool = False) -> Word:
        return cls(value if text is None else text, value, value, value, home=home)

    @classmethod
    def unknown(cls, text: str) -> Word:
        """A word of which nothing is known (`$X`, a substitution): any words at run time."""
        return cls(text, None, splat=True)

    @property
    def known(self) -> bool:
        """Exactly one word whose value the script fixes."""
        return self.value is not None and not self.glob and not self.splat

    @property
    def shown(self) -> str:
        """The word for a person: its value when known, as written otherwise."""
        return self.value if self.known and self.value is not None else self.text


def skeleton(text: str) -> str:
    """What a name looks like to a person: compatibility-normalised, case-folded, format
    characters (zero-width joiners, bidi marks) dropped and common Cyrillic and Greek
    lookalikes of Latin letters replaced (`git` spelt with a Cyrillic i is `git`)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(
        _CONFUSABLES.get(char, char) for char in folded if unicodedata.category(char) != "Cf"
    )


# Lowercase lookalikes (after casefold) of Latin letters and of `-`: Cyrillic, Greek, IPA
# letters and the Unicode dashes, written as escapes so this file shows none of them.
_CONFUSABLES: Final = dict(
    zip(
        "\u0430\u0432\u0441\u0501\u0435\u04bb\u0456\u0458\u043a\u043c\u043d\u043e\u0440\u051b"
        "\u0455\u0442\u0443\u0445\u0461\u04cf\u03b1\u03b2\u03b5\u03b9\u03ba\u03bd\u03bf\u03c1"
        "\u03c4\u03c5\u03c7\u0475\u0261\u0131\u2010\u2011\u2012\u2013\u2014\u2212",
        "abcdehijkmhopqstyxwlabeikvoptuxvgi------",
        strict=True,
    )
)


def _compatible_ends(head: str, tail: str, literal_head: str, literal_tail: str) -> bool:
    """Whether a word known to start with `head` and end with `tail` may be a string that
    a pattern says starts with `literal_head` and ends with `literal_tail`, in any case or
    through a lookalike letter (as a literal may: `shopt -s nocaseglob` makes `/DAT?`
    `/data`)."""
    joined = head + tail + literal_head + literal_tail
    fold = str.lower if joined.isascii() else skeleton
    head, tail = fold(head), fold(tail)
    literal_head, literal_tail = fold(literal_head), fold(literal_tail)
    return (head.startswith(literal_head) or literal_head.startswith(head)) and (
        tail.endswith(literal_tail) or literal_tail.endswith(tail)
    )


@attrs.frozen
class Alternative:
    """One spelling a pattern accepts: a literal, a glob (`*` for any run of characters),
    or a short option that also matches inside a bundle (`-f` in `-rf`)."""

    __repr__ = fields_repr

    source: str  # as the rule wrote it
    literal: str | None  # the exact word, when the spelling has no `*`
    pieces: tuple[str, ...]  # a glob's literal pieces around its `*`s
    short_flag: str | None  # the letter of a `-X` spelling
    home: bool  # starts with `~`: the home directory

    @classmethod
    def parse(cls, source: str) -> Alternative:
        """`*` is any run of characters; `\\*` a literal star, `\\\\` a backslash."""
        pieces: list[str] = []
        current: list[str] = []
        escaped = False
        for char in source:
            if escaped:
                current.append(char)
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == "*":
                pieces.append("".join(current))
                current = []
            else:
                current.append(char)
        if escaped:
            current.append("\\")
        pieces.append("".join(current))
        literal = pieces[0] if len(pieces) == 1 else None
        is_flag = literal is not None and len(literal) == 2 and literal[0] == "-"
        flag = literal[1] if is_flag and literal is not None and literal[1].isalnum() else None
        return cls(source, literal, tuple(pieces), flag, source.startswith("~"))

    def match(self, word: Word) -> Match:
        if word.splat:
            return Match.MAYBE
        if word.value is not None and not word.glob:
            if word.home:
                return self._match_home(word.value, moved=word.moved)
            if self.home:
                return Match.NO
            answer = self._match_value(word.value)
            beyond = past_a_link(word.value) if answer is Match.NO and self.path else None
            if beyond is not None and (beyond == "" or self._may_meet(("", beyond))):
                return Match.MAYBE  # `/proc/self/root/data` is `/data`, `/dev/fd/3` any path
            return answer
        # Partly known: a glob (pathname expansion) or a quoted expansion.
        if (
            word.glob
            and self.literal is not None
            and _same_path(word.value or "", self.literal)
            and word.home == self.home
        ):
            return Match.YES  # the rule names the pattern itself (`rm -rf \*`)
        if self.short_flag is not None:
            if word.head and (not word.head.startswith("-") or word.head.startswith("--")):
                return Match.NO
            return Match.MAYBE
        first, last = self.pieces[0], self.pieces[-1]
        head, tail = word.head, word.tail
        if self.path:
            # As the kernel spells it: `/dat?/`, `//dat?` and `"$D"/` may be `/data`.
            head, tail = _spelt_head(head), _spelt_tail(tail)
            if self.literal is not None:
                first = last = normal_path(self.literal)
        if self.path and self._past_a_link(word, head, tail):
            return Match.MAYBE  # `/proc/self/root/dat?`, `/proc/*/root/data`
        if self.path and (
            _climbs(head)
            or _climbs(tail)
            or _glob_climbs(word.value, len(word.head))
            or (word.value is None and not word.numbers)
            or (word.moved and not self.home)
        ):
            # What `..` climbs out of may be anything: only what follows the last is known.
            # An expansion may hold `..` too (`/srv/"$X"` with X=../data): past it, only
            # the end after the last expansion is known.
            if word.value is None and not word.numbers and not _climbs(tail):
                shape: tuple[str, ...] = ("", tail)
            elif _climbs(tail):
                shape = ("", _after_climbs(tail).rstrip("/"))
            elif _glob_climbs(word.value, len(word.head)):
                shape = ("", tail)  # `/s?v/../d?ta`, `/srv/.?/data`: a `..` among the globs
            elif word.moved and not _climbs(head):  # `HOME=/; rm -rf ~/dat?`
                slash = head.find("/")
                shape = ("", "" if slash < 0 else head[slash:], tail)
            else:
                shape = ("", _after_climbs(head), tail)
            return Match.MAYBE if self._may_meet(shape) else Match.NO
        heads = [head]
        if word.home and not self.home:
            # `~+/dat?` is `./dat?`; a pattern beginning with `*` meets any directory.
            working = head[1:2] in ("+", "-") and head[2:3] in ("", "/")
            heads = (["." + head[2:]] if working else []) + ([""] if not first else [])
        elif word.home != self.home:
            return Match.NO
        elif word.home and head[1:2] not in ("", "/"):
            # `~alice/dat?` is the home directory's `dat?` when alice runs it.
            slash = head.find("/")
            heads.append("~" if slash < 0 else "~" + head[slash:])
        if word.numbers:  # `/tmp/lock.$$`, `/proc/"$$"/root/x`: digits where unknown
            meets = any(self._may_meet((h, tail)) for h in heads)
        elif word.value is not None and self.literal is not None and "**" not in word.value:
            # A glob (no `..` in it, as above) becomes a word of as many components: a
            # literal it may be starts with its start and ends with its end, both whole
            # (`~/.cache/*` is never `~`, `/tmp/x/*` never `/`); globstar's `**` may be
            # none (`/data/**` is `/data/` too).
            meets = any(_holds_ends(first, h, tail) for h in heads)
        else:
            meets = any(_compatible_ends(h, tail, first, last) for h in heads)
        return Match.MAYBE if meets else Match.NO

    def _match_home(self, value: str, *, moved: bool = False) -> Match:
        """A known word starting with `~` (or `$HOME`): the home directory, another
        user's, or a working directory (`~+`, `~-`), none of which the script fixes."""
        if self.short_flag is not None:
            return Match.NO
        if moved and not self.home:
            return self._match_moved_home(value)
        rest = _above_home(value)
        if rest is not None:  # `~root/..`, `~/../../opt/x`: some absolute path
            if self.pieces[0][:1] not in ("/", "~"):
                return self._match_any_directory(value)
            return Match.MAYBE if not rest or self._may_meet(("", "/" + rest)) else Match.NO
        if not self.home:
            # `~+` is $PWD, the working directory (and `~-` $OLDPWD may be): `./x`.
            working = value[1:2] in ("+", "-") and value[2:3] in ("", "/")
            if working and self._match_value("." + value[2:]) is not Match.NO:
                return Match.MAYBE
            return self._match_any_directory(value)
        answer = self._match_value(value)
        named = _named_home(value) if answer is Match.NO else None
        if named is not None and self._match_value(named) is not Match.NO:
            return Match.MAYBE  # `~alice` is the home directory when alice runs it
        return answer

    def _match_moved_home(self, value: str) -> Match:
        """A home word of a script that may set HOME (or PWD, OLDPWD), against a pattern
        that names no home: the directory may be any path, absolute or relative
        (`HOME=/; rm -rf ~/data` is `/data`, `HOME=.; ~/deploy.sh` is `./deploy.sh`), so
        only what follows it (past its last `..`) is known; `~` alone may be any word."""
        if self.literal is None and not self.pieces[0]:
            return self._match_any_directory(value)
        slash = value.find("/")
        if slash < 0:
            return Match.MAYBE
        rest = value[slash:]
        if _climbs(rest):
            rest = _after_climbs(rest)
            if normal_path(rest) == "/":  # `~/data/x/..`: any directory
                return Match.MAYBE
        return Match.MAYBE if self._may_meet(("", normal_path(rest))) else Match.NO

    def _match_any_directory(self, value: str) -> Match:
        """A home word against a pattern that names no home and no absolute path: a glob
        beginning with `*` (`*.key`, `*`) meets it whatever the directory is."""
        if self.literal is not None or self.pieces[0]:
            return Match.NO
        slash = value.find("/")
        rest = "" if slash < 0 else value[slash:]
        if _glob_match(self.pieces, rest):
            return Match.YES
        return Match.MAYBE if self._may_meet(("", rest)) else Match.NO

    def _past_a_link(self, word: Word, head: str, tail: str) -> bool:
        """Whether a partly known word through a magic link may meet the pattern: a glob
        whose components may spell one (`/proc/*/root/data`, `/proc/self/r?ot/x`), or a
        known start that holds one (`/proc/self/root/"$X"`). An expansion's value may end
        in one too (`"$P"/root/data`): `_may_meet` sees to that."""
        value = word.value if word.value is not None and not word.home else head
        beyond = past_a_link(value, glob=word.value is not None and not word.home)
        if beyond is None:
            return False
        if beyond == "":
            return True
        star = next((i for i, char in enumerate(beyond) if char in "*?["), None)
        if star is None:
            return self._may_meet(("", beyond) if word.value is not None else ("", beyond, tail))
        return self._may_meet(("", beyond[:star], tail))

    def _may_meet(self, shape: tuple[str, ...]) -> bool:
        """Whether some word of `shape` (literal pieces around `*`s, as a glob's) matches
        the pattern, in any case or through a lookalike letter. What follows a `*` may
        follow a magic link (`*/root/data` may be `/data`) against a path."""
        pieces = self.pieces if self.literal is None else (normal_path(self.literal),)
        if _globs_meet(pieces, shape):
            return True
        if not self.path:
            return False
        for index in range(1, len(shape)):
            for end in ends_past_a_link(shape[index]):
                if end == "" or _globs_meet(pieces, ("", end, *shape[index + 1 :])):
                    return True
        return False

    def _match_value(self, value: str) -> Match:
        if self.short_flag is not None:
            if value == self.literal:
                return Match.YES
            if len(value) > 2 and value[0] == "-" and value[1] != "-" and value[1:].isalnum():
                return Match.YES if self.short_flag in value[1:] else Match.NO
            return _lookalike(value, self.source)
        if self.literal is not None:
            if _same_path(value, self.literal):
                return Match.YES
            if _is_path(self.literal):  # `/USR//bin/make` looks like `/usr/bin/make`
                spelt = _lookalike(normal_path(value), normal_path(self.literal))
                if spelt is Match.MAYBE:
                    return spelt
                if _through_dotdot(value, self.literal):
                    return Match.MAYBE
            return _lookalike(value, self.literal)
        if _glob_match(self.pieces, value):
            return Match.YES
        if self.path and _glob_match(self.pieces, normal_path(value)):
            return Match.YES
        spellings = collapsed_paths(value) if self.path else ()
        if any(_glob_match(self.pieces, collapsed) for collapsed in spellings):
            return Match.MAYBE
        # Another case or a lookalike letter, as for a literal: run time decides.
        if not spellings:
            spellings = (normal_path(value) if self.path else value,)
        if all(spelt.isascii() for spelt in spellings) and self.source.isascii():
            pieces = tuple(piece.lower() for piece in self.pieces)
            folded = any(_glob_match(pieces, spelt.lower()) for spelt in spellings)
        else:
            pieces = tuple(skeleton(piece) for piece in self.pieces)
            folded = any(_glob_match(pieces, skeleton(spelt)) for spelt in spellings)
        return Match.MAYBE if folded else Match.NO

    @property
    def path(self) -> bool:
        """Whether the pattern names a path (`/usr/bin/mak*`, `./scripts/*`, `~/x`), whose
        words are compared as the kernel resolves their spelling."""
        return _is_path(self.pieces[0])


def _is_path(literal: str) -> bool:
    """A rule's literal that names a path: its spellings (`/usr//bin/make`) are the same."""
    return "/" in literal or literal[:1] == "~"


def _same_path(value: str, literal: str) -> bool:
    if value == literal:
        return True
    return _is_path(literal) and normal_path(value) == normal_path(literal)


def _through_dotdot(value: str, literal: str) -> bool:
    """Whether `value` meets the path `literal` once its `..` are taken away (in any
    case): `/srv/../data` is `/data` unless `/srv` is a symbolic link, so it may be."""
    spelt = normal_path(literal)
    return any(
        _same_path(collapsed, literal) or _lookalike(collapsed, spelt) is Match.MAYBE
        for collapsed in collapsed_paths(value)
    )


def _holds_dotdot(value: str | None) -> bool:
    return value is not None and ".." in value.split("/")


def _climbs(known: str) -> bool:
    """Whether a known start or end of a word may hold a `..` component (a part of one
    counts: what follows is unknown)."""
    return ".." in known


def _holds_ends(literal: str, head: str, tail: str) -> bool:
    """Whether `literal` may be a glob's word that starts with `head` and ends with `tail`
    (in any case, through a lookalike letter): both in it, apart."""
    joined = literal + head + tail
    fold = str.lower if joined.isascii() else skeleton
    literal, head, tail = fold(literal), fold(head), fold(tail)
    fits = len(literal) >= len(head) + len(tail)
    return fits and literal.startswith(head) and literal.endswith(tail)


def _spelt_head(head: str) -> str:
    """A partly known word's known start as the kernel spells it: repeated `/` one, `/./`
    dropped (its end is left: `/.` may go on as `/.x`)."""
    while "//" in head or "/./" in head:
        head = head.replace("//", "/").replace("/./", "/")
    return head


def _spelt_tail(tail: str) -> str:
    """A partly known word's known end as the kernel spells it: repeated `/` one, `/./`
    dropped, a trailing `/` or `/.` dropped (`"$D"/` may be `/data`; its start is left:
    `./x` may follow a name, as in `a./x`)."""
    while "//" in tail or "/./" in tail:
        tail = tail.replace("//", "/").replace("/./", "/")
    if tail.endswith("/."):
        tail = tail[:-1]
    return tail.rstrip("/")


def _glob_climbs(value: str | None, known: int) -> bool:
    """Whether a glob's `..` may stand past its known start (`value[:known]`): a `..`
    component, or one that begins with `.` and a pattern character (`.?`, `.*`, `.[.]`
    match `..` once `globskipdots` is off, as before bash 5.2)."""
    if value is None:
        return False
    end = -1
    for component in value.split("/"):
        end += len(component) + 1
        if end <= known:
            continue
        if component == ".." or (component[:1] == "." and component[1:2] in ("*", "?", "[")):
            return True
    return False


def _after_climbs(known: str) -> str:
    """A word's known part past its last `..` (`x/../opt/x.sh` -> `/opt/x.sh`): all that is
    known of where it leads."""
    parts = known.split("/")
    climbs = [index for index, part in enumerate(parts) if ".." in part]
    return "/" + "/".join(parts[climbs[-1] + 1 :]) if climbs else known


_STAR: Final = ""  # a `*` among a glob's tokens (every other token is one character)
_MEET_LIMIT: Final = 250_000  # past this many states two globs are taken to meet


def _globs_meet(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """Whether two globs (literal pieces around `*`s) match a common string, in any case
    or through a lookalike letter: a walk over both at once, a `*` taking the other's
    characters one by one."""
    joined = "".join((*first, *second))
    fold = str.lower if joined.isascii() else skeleton
    a = _tokens(tuple(fold(piece) for piece in first))
    b = _tokens(tuple(fold(piece) for piece in second))
    if (len(a) + 1) * (len(b) + 1) > _MEET_LIMIT:
        return True  # too long to walk: perhaps
    seen: set[tuple[int, int]] = set()
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        x = a[i] if i < len(a) else None
        y = b[j] if j < len(b) else None
        if x == _STAR:
            stack.append((i + 1, j))
            if y is not None:
                stack.append((i, j + 1))
        if y == _STAR:
            stack.append((i, j + 1))
            if x is not None:
                stack.append((i + 1, j))
        if x is not None and y is not None and x != _STAR and y != _STAR and x == y:
            stack.append((i + 1, j + 1))
    return False


def _tokens(pieces: tuple[str, ...]) -> list[str]:
    tokens: list[str] = list(pieces[0])
    for piece in pieces[1:]:
        tokens.append(_STAR)
        tokens.extend(piece)
    return tokens


def _above_home(value: str) -> str | None:
    """For a word starting with `~` whose `..` climb above that directory, what follows the
    climb (`~/../../opt/x` -> `opt/x`, `~root/..` -> ``): the word is then some absolute
    path ending so. None when it stays at or under the home."""
    slash = value.find("/")
    if slash < 0:
        return None
    # `~//..` climbs as `~/..` does (normpath would read `//..` as the root's `/`).
    inside = posixpath.normpath(value[slash + 1 :].lstrip("/") or ".")
    if inside != ".." and not inside.startswith("../"):
        return None
    while inside == ".." or inside.startswith("../"):
        inside = inside[3:]
    return inside


def _named_home(value: str) -> str | None:
    """`~alice/x` as `~/x`: another user's home (or `~+`, `~-`: the working directories),
    which may be the home directory of whoever runs it; None for `~` and `~/x`."""
    if not value.startswith("~") or value[1:2] in ("", "/"):
        return None
    slash = value.find("/")
    return "~" if slash < 0 else "~" + value[slash:]


def _lookalike(value: str, literal: str) -> Match:
    """A word that only looks like the literal (another case, a Cyrillic letter, a
    zero-width joiner) is not the same word, but a person, a case-insensitive file
    system or a lookalike binary may treat it as one: run time decides."""
    if value == literal:
        return Match.NO  # an exact word was compared before; this is a spelling of its own
    if value.isascii() and literal.isascii():  # the common case, without unicodedata
        return Match.MAYBE if value.lower() == literal.lower() else Match.NO
    return Match.MAYBE if skeleton(value) == skeleton(literal) else Match.NO


def _glob_match(pieces: tuple[str, ...], value: str) -> bool:
    first, *middle, last = pieces
    if len(value) < len(first) + len(last) or not value.startswith(first):
        return False
    if not value.endswith(last):
        return False
    position, end = len(first), len(value) - len(last)
    for piece in middle:
        found = value.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


@attrs.frozen
class WordPattern:
    """A word a rule asks for: any of its alternatives (`[push, fetch]`)."""

    __repr__ = fields_repr

    alternatives: tuple[Alternative, ...]
    # The plain literals (no `*`, no `-X` flag, no `~`), for a known word's fast path.
    _plain: frozenset[str] = attrs.field(init=False, eq=False, repr=False)
    _folded: frozenset[str] = attrs.field(init=False, eq=False, repr=False)
    _only_plain: bool = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        plain = [
            a.literal
            for a in self.alternatives
            if a.literal is not None and a.short_flag is None and not a.home
        ]
        # A word without `/` meets a path literal only as `normal_path` spells it (`x/`).
        spelt = [normal_path(p) for p in plain]
        object.__setattr__(self, "_plain", frozenset((*plain, *spelt)))
        object.__setattr__(self, "_folded", frozenset(p.lower() for p in spelt))
        only = len(plain) == len(self.alternatives) and all(p.isascii() for p in plain)
        object.__setattr__(self, "_only_plain", only)

    @classmethod
    def of(cls, *sources: str) -> WordPattern:
        return cls(tuple(Alternative.parse(source) for source in sources))

    @property
    def options_only(self) -> bool:
        """Every spelling is an option (`[-r, -R, --recursive]`)."""
        return all(a.source[:1] == "-" and len(a.source) > 1 for a in self.alternatives)

    @property
    def never_an_option(self) -> bool:
        """No spelling can meet a word beginning with `-` (`[/, ~]`; not `*`, `*x`)."""
        return all(skeleton(a.pieces[0][:1]) not in ("", "-") for a in self.alternatives)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(alternative.source for alternative in self.alternatives)

    def match(self, word: Word, *, allowing: bool = False) -> Match:
        """`allowing`: for an allow rule, whose glob never certainly meets a word that a
        `..` may lead out of what the glob names (`./docs/*` and `./docs/../../x`)."""
        value = word.value
        fast = value is not None and word.known and not word.home and "/" not in value
        if self._only_plain and fast and value is not None:
            if value in self._plain:
                return Match.YES
            if value.isascii():
                return Match.MAYBE if value.lower() in self._folded else Match.NO
        answer = Match.NO
        for alternative in self.alternatives:
            found = alternative.match(word)
            leaves = allowing and alternative.literal is None and _holds_dotdot(value)
            if found is Match.YES and leaves:
                found = Match.MAYBE
            if found is Match.YES:
                return Match.YES
            if found is Match.MAYBE:
                answer = Match.MAYBE
        return answer

    def shown(self) -> str:
        sources = self.sources
        return sources[0] if len(sources) == 1 else "[" + ", ".join(sources) + "]"
