"""Answer scrubbing (issue 41): every form of a credential's real value an origin could
echo back, found in an answer's head and body (across reads, after gzip or deflate is
undone) and replaced by the command's placeholder. Pure: the exchange feeds it.

The forms: the value itself; each character of it percent-encoded (either hex case,
`+` for a space), JSON-escaped (`\\uXXXX`, `\\/`) or an HTML entity (named, decimal,
hex), in any mix; UTF-16 (LE, BE); base64 and base64url at each of the three
alignments, the whole run of base64 around it decoded, rid of the value and encoded
again (so a `Basic` blob, base64 of `user:value`, is found whatever the user, and
comes back as the blob of `user:placeholder`). A value transformed otherwise (hashed,
encrypted, reversed, split by the origin) is not found: the caller's documentation says so.
"""

from __future__ import annotations

import base64
import functools
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence

import attrs

from ..reprs import fields_repr

# A base64 form shorter than this is not looked for: a handful of characters matches
# by chance in binary bodies, and a value that short has no base64 core to speak of.
MIN_ENCODED = 8
# Decoding an answer stops once it has inflated past this many times what was read,
# beyond the first FLOOR bytes (a zip bomb must not outrun the scan, nor the client).
INFLATE_RATIO = 200
INFLATE_FLOOR = 8 * 1024 * 1024
# Pieces a decoder hands back at most at once.
PIECE = 65536
# Codings the proxy can undo to scan an answer; `identity` needs nothing.
DECODABLE = frozenset({"gzip", "x-gzip", "deflate"})
# Statuses whose answer has no body, whatever its headers say.
_BODILESS = frozenset({204, 304})
# Named HTML entities for the characters a credential may hold (HTML5 names).
_ENTITIES: dict[str, tuple[str, ...]] = {
    "&": ("amp",),
    "<": ("lt",),
    ">": ("gt",),
    '"': ("quot",),
    "'": ("apos",),
    "/": ("sol",),
    ":": ("colon",),
    "=": ("equals",),
    "+": ("plus",),
    "-": ("hyphen", "dash"),
    ".": ("period",),
    "_": ("lowbar", "UnderBar"),
    "!": ("excl",),
    "#": ("num",),
    "$": ("dollar",),
    "%": ("percnt",),
    "(": ("lpar",),
    ")": ("rpar",),
    "*": ("ast", "midast"),
    ",": ("comma",),
    ";": ("semi",),
    "?": ("quest",),
    "@": ("commat",),
    "[": ("lsqb", "lbrack"),
    "]": ("rsqb", "rbrack"),
    "\\": ("bsol",),
    "^": ("Hat",),
    "`": ("grave", "DiacriticalGrave"),
    "{": ("lcub", "lbrace"),
    "}": ("rcub", "rbrace"),
    "|": ("verbar", "vert", "VerticalLine"),
    "~": ("tilde",),
    " ": ("nbsp",),
    "\t": ("Tab",),
}
_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\t": "\\t"}


class ScrubError(Exception):
    """An answer that cannot be scanned (a coding the proxy cannot undo, a body that
    inflates past the bound, a corrupt stream): one line saying why."""


def _hex(number: int, width: int) -> bytes:
    """`number` in hex, `width` digits, matched in either case."""
    digits = f"{number:0{width}x}"
    return b"".join(f"[{d}{d.upper()}]".encode() if d.isalpha() else d.encode() for d in digits)


# A way a form may begin: its first byte (literal), then a regular expression.
_Start = tuple[bytes, bytes]


def _character(char: str) -> tuple[list[_Start], int]:
    """The ways one character of a value may be echoed (as itself, %XX, `\\uXXXX` and
    JSON's short escapes, HTML entities), each as its first byte and the pattern of
    the rest, and the longest match among them."""
    code = ord(char)
    digits = str(code).encode()
    forms: list[_Start] = [
        (char.encode(), b""),
        (b"%", _hex(code, 2)),
        (b"\\", b"u" + _hex(code, 4)),
        (b"&", b"#0{0,4}" + digits + b";"),
        (b"&", b"#[xX]0{0,4}" + _hex(code, 2) + b";"),
    ]
    longest = max(6, 2 + 4 + len(digits) + 1, 3 + 4 + 2 + 1)
    if char == " ":
        forms.append((b"+", b""))
    if char in _JSON_SHORT:
        escaped = _JSON_SHORT[char].encode()
        forms.append((escaped[:1], re.escape(escaped[1:])))
    for name in _ENTITIES.get(char, ()):
        forms.append((b"&", re.escape(name.encode()) + b";"))
        longest = max(longest, len(name) + 2)
    return forms, longest


def _pattern(start: _Start) -> bytes:
    return re.escape(start[0]) + start[1]


def _base64_core(data: bytes, shift: int, urlsafe: bool) -> bytes:
    """The base64 characters that `data` alone decides when it starts `shift` bytes
    into a 3-byte group (the characters it shares with what surrounds it dropped)."""
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    encoded = encode(b"\0" * shift + data)
    whole = (shift + len(data)) // 3 * 4  # characters of complete groups
    lead = {0: 0, 1: 2, 2: 3}[shift]  # characters the padding bytes touch
    return encoded[lead:whole]


@attrs.frozen
class Needle:
    """One form of one credential's value, as regular expressions over bytes: `first`,
    the ways it may begin (a literal first byte, so the engine skips ahead in C to
    where one could start, and the pattern after it), then `rest`; its longest match,
    and what replaces it. A base64 core (`core` its alignment: the bytes before the
    value in its 3-byte group, and whether base64url) is not replaced alone: the run
    of base64 around it is decoded, rid of the value and encoded again."""

    __repr__ = fields_repr

    first: tuple[_Start, ...]
    rest: bytes
    longest: int
    replacement: bytes
    core: tuple[int, bool] | None = None


def _literal(data: bytes, replacement: bytes, core: tuple[int, bool] | None = None) -> Needle:
    return Needle(((data[:1], b""),), re.escape(data[1:]), len(data), replacement, core)


def needles(value: str, replacement: str) -> list[Needle]:
    """Every form of `value` the scrubber looks for, each with `replacement` in that
    form (the textual echoes take it as itself), longest first. None depends on the
    request: the pattern is made once per set of credentials (a `Basic` blob, base64
    of `user:value`, is found by the value's base64 core inside it, whatever the user)."""
    raw, wanted = value.encode(), replacement.encode()
    found: list[Needle] = []
    for shift in (0, 1, 2):
        for urlsafe in (False, True):
            core = _base64_core(raw, shift, urlsafe)
            if len(core) >= MIN_ENCODED:
                found.append(_literal(core, _base64_core(wanted, shift, urlsafe), (shift, urlsafe)))
    found.append(_literal(value.encode("utf-16-le"), replacement.encode("utf-16-le")))
    # Big-endian begins with a NUL, the commonest byte of binary bodies: looked for
    # from the byte after it (the NUL before stays where it is).
    found.append(_literal(value.encode("utf-16-be")[1:], replacement.encode("utf-16-be")[1:]))
    characters = [_character(char) for char in value]
    rest = b"".join(
        b"(?:" + b"|".join(_pattern(form) for form in forms) + b")" for forms, _ in characters[1:]
    )
    longest = sum(size for _, size in characters)
    found.append(Needle(tuple(characters[0][0]), rest, longest, wanted))
    unique = {(needle.first, needle.rest): needle for needle in found}
    return sorted(unique.values(), key=lambda needle: -needle.longest)


@attrs.frozen
class Secretive:
    """What a scrubber looks for: a credential's real value and what replaces it (its
    placeholder, or a marker naming it for the header form). The value never leaves
    this object but into the pattern."""

    __repr__ = fields_repr

    value: str = attrs.field(repr=False)
    replacement: str
    name: str = ""


@attrs.frozen
class _Branch:
    """What one branch of the pattern stands for: its replacement, the secret's name,
    and for a base64 core its alignment (None for every other form)."""

    __repr__ = fields_repr

    replacement: bytes
    name: str
    core: tuple[int, bool] | None
    secret: int  # the secret's index in the plan's


@attrs.frozen
class _Plan:
    """A set of secrets' compiled pattern, what each branch stands for, and the window."""

    __repr__ = fields_repr

    pattern: re.Pattern[bytes] | None
    branches: tuple[_Branch, ...]
    # Each secret's value, its replacement and name: what a base64 run is rid of.
    secrets: tuple[tuple[bytes, bytes, str], ...]
    window: int


@functools.lru_cache(maxsize=64)
def _plan(secrets: tuple[Secretive, ...]) -> _Plan:
    """The compiled pattern for `secrets`, what each of its branches stands for, and
    the window: made once per set of secrets (a few milliseconds), not per answer
    (nothing in it comes from a request)."""
    ordered = sorted(secrets, key=lambda item: -len(item.value))
    named = [
        (index, secret.name, needle)
        for index, secret in enumerate(ordered)
        for needle in needles(secret.value, secret.replacement)
    ]
    # Branches grouped by their literal first byte (the engine then skips ahead in C
    # to a byte one could begin with, and tries only that byte's branches), each ending
    # in a group of its own: the group that matched says which form (and so which
    # replacement) it was.
    groups: dict[bytes, list[tuple[bytes, _Branch]]] = {}
    for index, name, needle in named:
        for first, after in needle.first:
            branch = after + b"(" + needle.rest + b")"
            groups.setdefault(first, []).append(
                (branch, _Branch(needle.replacement, name, needle.core, index))
            )
    branches = b"|".join(
        re.escape(first) + b"(?:" + b"|".join(branch for branch, _ in group) + b")"
        for first, group in groups.items()
    )
    return _Plan(
        pattern=re.compile(branches) if named else None,
        branches=tuple(branch for group in groups.values() for _, branch in group),
        secrets=tuple(
            (secret.value.encode(), secret.replacement.encode(), secret.name) for secret in ordered
        ),
        window=max((needle.longest for _, _, needle in named), default=1),
    )


# The base64 characters (both alphabets) and a run of them, then its padding.
_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
_RUN = re.compile(rb"[A-Za-z0-9+/_-]*")
_PADDING = re.compile(rb"={0,2}")


def _reach(pattern: re.Pattern[bytes], data: bytes, at: int) -> int:
    """Where what `pattern` (which matches the empty string too) matches at `at` ends."""
    match = pattern.match(data, at)
    return at if match is None else match.end()


_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
# Characters of a core's 3-byte group before it, by the bytes before the value there.
_LEAD = {0: 0, 1: 2, 2: 3}
# Characters the proxy holds back beyond the window (already scanned): a core found
# next read may begin its group with them, and they are replaced with it.
_LEFT = 3
# The longest run of base64 holding a value that is decoded and encoded again (from
# the value's group to the run's end); past it the answer is cut (ScrubError): it is
# held back whole until it ends, and re-read on each read until then.
RUN_LIMIT = 16384


@attrs.frozen
class _Run:
    """A base64 run rid of values: `data[begin:end]` is replaced by `text`, `hits`
    values (by name) were in it."""

    __repr__ = fields_repr

    begin: int
    end: int
    text: bytes
    hits: dict[str, int]


class Scrubber:
    """Replaces every form of the given values in a stream fed in chunks: what `feed`
    returns is safe to pass on, what could still be the start of a value is held back
    (at most the longest form, less a byte, and a few characters before it; a base64
    run holding a value, until it ends) until the next chunk or `finish`."""

    __slots__ = ("_plan", "_skip", "_tail", "count", "found", "window")

    def __init__(self, secrets: Sequence[Secretive]) -> None:
        self._plan = _plan(tuple(secrets))
        self.window = self._plan.window
        self._tail = b""
        self._skip = 0  # bytes at the start of the tail already scanned
        self.count = 0
        # How many times each secret (by name) was replaced.
        self.found: dict[str, int] = {}

    def _hit(self, name: str, times: int = 1) -> None:
        self.count += times
        self.found[name] = self.found.get(name, 0) + times

    def _run(
        self, data: bytes, match: re.Match[bytes], branch: _Branch, floor: int, final: bool
    ) -> _Run | int:
        """The base64 run around the core `match` (from its 3-byte group, never before
        `floor`, to the run's end and padding) decoded, every value in it replaced, and
        encoded again in the same alphabet and framing, so that no character the value
        touched (those it shares with its neighbours, its last partial group, its
        padding) survives. Where the run begins, when it may go on in the next chunk."""
        assert branch.core is not None
        shift, urlsafe = branch.core
        lead = _LEAD[shift]
        start = match.start()
        begin = start
        while start - begin < lead and begin - 1 >= floor and data[begin - 1] in _BASE64:
            begin -= 1
        run_end = _reach(_RUN, data, match.end())
        if run_end - begin > RUN_LIMIT:
            raise ScrubError(
                f"a base64 run holding a credential's value goes on past {RUN_LIMIT} "
                "characters, the most the proxy decodes to replace it"
            )
        end = _reach(_PADDING, data, run_end)
        if not final and len(data) < end + self.window:
            return begin
        # A textual form inside the run (the value itself is base64 characters, and
        # could follow its own base64) ends the run where it begins: decoded, it would
        # pass on encoded again, unseen.
        # Another value's core in the run at the same alignment is replaced with it;
        # one at another alignment (two encodings glued together) ends the run where
        # its group begins, to be decoded on its own.
        pattern = self._plan.pattern
        assert pattern is not None
        group = start - lead
        more: list[tuple[int, int]] = []  # (where its value begins in the run, secret)
        probe, limit = match.end(), min(len(data), run_end + self.window)
        while (found := pattern.search(data, probe, limit)) is not None:
            if found.start() >= run_end:
                break
            other = self._plan.branches[(found.lastindex or 1) - 1]
            if other.core is None:
                run_end = end = found.start()
                break
            its_group = found.start() - _LEAD[other.core[0]]
            if (its_group - group) % 4:
                run_end = end = max(its_group, match.end())
                break
            more.append(((its_group - group) // 4 * 3 + other.core[0], other.secret))
            probe = found.end()
        chars = data[begin:run_end]
        # The group's characters not there (the run began inside it) decode as zeros;
        # what encodes them again is not passed on.
        missing = lead - (start - begin)
        chars = b"A" * missing + chars
        dangling = chars[-1:] if len(chars) % 4 == 1 else b""
        whole = chars[: len(chars) - len(dangling)]
        standard = whole.translate(_TO_STANDARD)
        decoded = base64.b64decode(standard + b"=" * (-len(standard) % 4))
        if b"-" in chars or b"_" in chars:
            urlsafe = True
        elif b"+" in chars or b"/" in chars:
            urlsafe = False
        spans: list[tuple[int, int, bytes, str]] = []
        for index, (value, wanted, name) in enumerate(self._plan.secrets):
            # Where a value's core was found, its first byte (partly decided by the
            # characters before the core) and its last (in the partial group) go too,
            # whatever they decode to; elsewhere in the run, each value is found by
            # its bytes but the first and the last two.
            inner = value[1:-2] if len(value) > 4 else value
            skip = 1 if len(value) > 4 else 0
            at = 0
            if index == branch.secret:
                spans.append((shift, shift + len(value), wanted, name))
            spans += [(at, at + len(value), wanted, name) for at, i in more if i == index]
            while (where := decoded.find(inner, at)) != -1:
                first = max(0, where - skip)  # its first byte may be before the group
                spans.append((first, where - skip + len(value), wanted, name))
                at = where - skip + len(value)
        spans.sort()
        pieces: list[bytes] = []
        hits: dict[str, int] = {}
        done = 0
        for span_start, span_end, wanted, name in spans:
            if span_end <= done:
                continue
            if span_start < done:  # overlapping the last: the last is widened
                done = span_end
                continue
            pieces += [decoded[done:span_start], wanted]
            hits[name] = hits.get(name, 0) + 1
            done = span_end
        cut_short = done > len(decoded)  # the run ends inside a value
        pieces.append(decoded[done:])
        text = base64.b64encode(b"".join(pieces))
        if urlsafe:
            text = text.translate(_TO_URLSAFE)
        if end == run_end and len(whole) % 4:  # it was sent unpadded: so is this
            text = text.rstrip(b"=")
        if dangling and not cut_short:
            text += dangling
        return _Run(begin, end, text[missing:], hits)

    def _replace(self, data: bytes, until: int, final: bool) -> tuple[bytes, int, int]:
        """`data` with every match starting before `until` (and after the part already
        scanned) replaced: the text to pass on, where in `data` it ends, and how many
        bytes after that were scanned already (held back only as a core's group)."""
        pattern = self._plan.pattern
        if pattern is None:
            cut = len(data) if final else until
            return data[:cut], cut, 0
        out: list[bytes] = []
        position = 0
        for match in pattern.finditer(data, self._skip):
            if match.start() >= until:
                break
            if match.end() <= position:
                continue  # inside a base64 run already rid of values
            branch = self._plan.branches[(match.lastindex or 1) - 1]
            if match.start() < position:
                # A form begun inside a replaced run goes on past it: the rest goes
                # (for a core, with its last partial group and padding).
                end = match.end()
                if branch.core is not None:
                    end = min(_reach(_RUN, data, end), end + 3)
                    end = _reach(_PADDING, data, end)
                out.append(branch.replacement)
                self._hit(branch.name)
                position = end
                continue
            if branch.core is None:
                out += [data[position : match.start()], branch.replacement]
                self._hit(branch.name)
                position = match.end()
                continue
            run = self._run(data, match, branch, position, final)
            if isinstance(run, int):  # held back whole until it ends, scanned again then
                out.append(data[position:run])
                return b"".join(out), run, 0
            out += [data[position : run.begin], run.text]
            for name, times in run.hits.items():
                self._hit(name, times)
            position = run.end
        if final:
            out.append(data[position:])
            return b"".join(out), len(data), 0
        cut = max(position, until)
        passed = max(position, cut - _LEFT)
        out.append(data[position:passed])
        return b"".join(out), passed, cut - passed

    def feed(self, chunk: bytes) -> bytes:
        data = self._tail + chunk
        safe = len(data) - (self.window - 1)
        if safe <= self._skip:
            self._tail = data
            return b""
        out, passed, self._skip = self._replace(data, safe, final=False)
        self._tail = data[passed:]
        return out

    def finish(self) -> bytes:
        """What was held back, scrubbed: the stream has ended."""
        data, self._tail = self._tail, b""
        out = self._replace(data, len(data), final=True)[0]
        self._skip = 0
        return out

    def whole(self, data: bytes) -> bytes:
        """`data`, a value complete in itself (a header's), scrubbed."""
        skip, self._skip = self._skip, 0
        try:
            return self._replace(data, len(data), final=True)[0]
        finally:
            self._skip = skip


class Decoder:
    """Undoes one `Content-Encoding` (gzip or deflate) as the body streams, in pieces
    of at most `PIECE` bytes, and stops (ScrubError) once the output outgrows
    `INFLATE_RATIO` times the input beyond `INFLATE_FLOOR`."""

    __slots__ = ("_coding", "_held", "_inflater", "_read", "_written")

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._inflater: zlib._Decompress | None = None
        self._held = b""  # a deflate stream's first byte, alone: its format is not known yet
        self._read = 0
        self._written = 0

    def _new(self, first: bytes) -> zlib._Decompress:
        if self._coding == "deflate":
            # RFC 9110's deflate is the zlib format; some servers send raw deflate.
            zlib_header = (
                len(first) >= 2 and first[0] & 0x0F == 8 and ((first[0] << 8) | first[1]) % 31 == 0
            )
            return zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
        return zlib.decompressobj(zlib.MAX_WBITS | 16)

    def feed(self, data: bytes) -> Iterator[bytes]:
        self._read += len(data)
        pending, self._held = self._held + data, b""
        while pending:
            if self._inflater is None:
                if len(pending) < 2 and self._coding == "deflate":
                    self._held = pending
                    return
                self._inflater = self._new(pending)
            try:
                piece = self._inflater.decompress(pending, PIECE)
            except zlib.error as error:
                raise ScrubError(f"the {self._coding} body is corrupt ({error})") from None
            pending = self._inflater.unconsumed_tail
            if piece:
                self._written += len(piece)
                if self._written > INFLATE_FLOOR + INFLATE_RATIO * self._read:
                    raise ScrubError(
                        f"the {self._coding} body inflates past {INFLATE_RATIO} times its "
                        "size (a decompression bomb?)"
                    )
                yield piece
            if self._inflater.eof:
                # A gzip stream may hold several members, one after another.
                pending = self._inflater.unused_data + pending
                self._inflater = None
                if self._coding == "deflate" and pending:
                    raise ScrubError("the deflate body goes on after its end")
            elif not piece and not pending:
                return

    def finish(self) -> bytes:
        if self._held:
            raise ScrubError(f"the {self._coding} body ended before its stream did")
        if self._inflater is None:
            return b""
        try:
            rest = self._inflater.flush()
        except zlib.error as error:
            raise ScrubError(f"the {self._coding} body is corrupt ({error})") from None
        if not self._inflater.eof:
            raise ScrubError(f"the {self._coding} body ended before its stream did")
        return rest


def _codings(headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    return [
        token.strip().lower().decode("ascii", "backslashreplace")
        for name, value in headers
        if name.lower() == b"content-encoding"
        for token in value.split(b",")
        if token.strip()
    ]


def request_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """A request's headers for a host whose answers are scrubbed: the body asked
    identity-encoded (a coding the proxy cannot undo would hide a value), and no
    `Range` (a range could cut a value so that no read sees it whole)."""
    dropped = {b"accept-encoding", b"range", b"if-range"}
    kept = [(name, value) for name, value in headers if name.lower() not in dropped]
    return [*kept, (b"accept-encoding", b"identity")]


class AnswerScrub:
    """One answer from a host the proxy puts a credential into, made safe for the
    command: `head` scrubs the status line's reason and every header and decides how
    the body is read, `body` and `end` the body; `count` is how many values were
    replaced."""

    def __init__(self, secrets: Sequence[Secretive], host: str) -> None:
        self._scrubber = Scrubber(secrets)
        self._host = host
        self._decoder: Decoder | None = None

    @property
    def count(self) -> int:
        return self._scrubber.count

    @property
    def found(self) -> dict[str, int]:
        """How many values of each secret (by name) were replaced."""
        return dict(self._scrubber.found)

    def reason(self, reason: bytes) -> bytes:
        return self._scrubber.whole(reason)

    def head(
        self, status: int, headers: Sequence[tuple[bytes, bytes]], *, head_request: bool
    ) -> list[tuple[bytes, bytes]]:
        """The answer's headers scrubbed (a header whose name holds a value dropped);
        with a body to come, no `Content-Length` (the body is re-framed: a replacement
        may change its length) and no `Content-Encoding` once the proxy undoes it.
        ScrubError for a coding the proxy cannot undo."""
        out: list[tuple[bytes, bytes]] = []
        for name, value in headers:
            before = self._scrubber.count
            self._scrubber.whole(name)
            if self._scrubber.count != before:
                continue
            out.append((name, self._scrubber.whole(value)))
        if head_request or status in _BODILESS or status < 200:
            return out
        codings = [coding for coding in _codings(out) if coding != "identity"]
        if codings:
            if len(codings) > 1 or codings[0] not in DECODABLE:
                shown = ", ".join(codings)
                raise ScrubError(
                    f"{self._host} answered with Content-Encoding {shown}, which the proxy "
                    "cannot undo to remove the credential from it (it asks for identity; "
                    "gzip and deflate are undone)"
                )
            self._decoder = Decoder(codings[0])
        dropped = {b"content-length", b"content-encoding"}
        return [(name, value) for name, value in out if name.lower() not in dropped]

    def body(self, data: bytes) -> Iterator[bytes]:
        """What to pass on of the next chunk of the body (possibly nothing yet)."""
        pieces = [data] if self._decoder is None else self._decoder.feed(data)
        for piece in pieces:
            out = self._scrubber.feed(piece)
            if out:
                yield out

    def end(self) -> bytes:
        """The rest, the body having ended."""
        rest = b"" if self._decoder is None else self._decoder.finish()
        return self._scrubber.feed(rest) + self._scrubber.finish()
