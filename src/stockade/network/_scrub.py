"""Answer scrubbing (issue 41): every form of a credential's real value an origin could
echo back, found in an answer's head and body (across reads, after gzip or deflate is
undone) and replaced by the command's placeholder. Pure: the exchange feeds it.

The forms: the value itself; each character of it percent-encoded (either hex case,
`+` for a space), JSON-escaped (`\\uXXXX`, `\\/`) or an HTML entity (named, decimal,
hex), in any mix; UTF-16 (LE, BE); base64 and base64url at each of the three
alignments; the `Basic` blob (base64 of `user:value`) for each user a request named.
A value transformed otherwise (hashed, encrypted, reversed, split by the origin) is
not found: the caller's documentation says so.
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
    and what replaces it."""

    __repr__ = fields_repr

    first: tuple[_Start, ...]
    rest: bytes
    longest: int
    replacement: bytes


def _literal(data: bytes, replacement: bytes) -> Needle:
    return Needle(((data[:1], b""),), re.escape(data[1:]), len(data), replacement)


def needles(value: str, replacement: str, basic_users: Iterable[str] = ()) -> list[Needle]:
    """Every form of `value` the scrubber looks for, each with `replacement` in that
    form (the textual echoes take it as itself), longest first."""
    raw, wanted = value.encode(), replacement.encode()
    found: list[Needle] = []
    for user in dict.fromkeys(basic_users):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            blob = encode(f"{user}:{value}".encode())
            out = encode(f"{user}:{replacement}".encode())
            found.append(_literal(blob, out))
            if blob.rstrip(b"=") != blob:
                found.append(_literal(blob.rstrip(b"="), out.rstrip(b"=")))
    for shift in (0, 1, 2):
        for urlsafe in (False, True):
            core = _base64_core(raw, shift, urlsafe)
            if len(core) >= MIN_ENCODED:
                found.append(_literal(core, _base64_core(wanted, shift, urlsafe)))
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
    """What a scrubber looks for: each credential's real value, what replaces it (its
    placeholder, or a marker naming it for the header form), and the `Basic` users its
    requests named. The value never leaves this object but into the pattern."""

    __repr__ = fields_repr

    value: str = attrs.field(repr=False)
    replacement: str
    basic_users: tuple[str, ...] = ()
    name: str = ""


_Plan = tuple["re.Pattern[bytes] | None", list[bytes], list[str], int]


@functools.lru_cache(maxsize=64)
def _plan(secrets: tuple[Secretive, ...]) -> _Plan:
    """The compiled pattern for `secrets`, the replacement and secret's name of each of
    its branches, and the window: made once per set of secrets (a few milliseconds),
    not per answer."""
    ordered = sorted(secrets, key=lambda item: -len(item.value))
    named = [
        (secret.name, needle)
        for secret in ordered
        for needle in needles(secret.value, secret.replacement, secret.basic_users)
    ]
    # Branches grouped by their literal first byte (the engine then skips ahead in C
    # to a byte one could begin with, and tries only that byte's branches), each ending
    # in a group of its own: the group that matched says which form (and so which
    # replacement) it was.
    groups: dict[bytes, list[tuple[bytes, bytes, str]]] = {}
    for name, needle in named:
        for first, after in needle.first:
            branch = after + b"(" + needle.rest + b")"
            groups.setdefault(first, []).append((branch, needle.replacement, name))
    replacements = [replacement for group in groups.values() for _, replacement, _ in group]
    names = [name for group in groups.values() for _, _, name in group]
    branches = b"|".join(
        re.escape(first) + b"(?:" + b"|".join(branch for branch, _, _ in group) + b")"
        for first, group in groups.items()
    )
    pattern = re.compile(branches) if named else None
    window = max((needle.longest for _, needle in named), default=1)
    return pattern, replacements, names, window


class Scrubber:
    """Replaces every form of the given values in a stream fed in chunks: what `feed`
    returns is safe to pass on, what could still be the start of a value is held back
    (at most the longest form, less a byte) until the next chunk or `finish`."""

    __slots__ = ("_names", "_pattern", "_replacements", "_tail", "count", "found", "window")

    def __init__(self, secrets: Sequence[Secretive]) -> None:
        plan = _plan(tuple(secrets))
        self._pattern, self._replacements, self._names, self.window = plan
        self._tail = b""
        self.count = 0
        # How many times each secret (by name) was replaced.
        self.found: dict[str, int] = {}

    def _replace(self, data: bytes, until: int) -> tuple[bytes, int]:
        """`data` with every match starting before `until` replaced, up to where the
        last one ends or `until`, and where that is."""
        if self._pattern is None:
            return data[:until], until
        out: list[bytes] = []
        position = 0
        for match in self._pattern.finditer(data):
            if match.start() >= until:
                break
            out.append(data[position : match.start()])
            branch = (match.lastindex or 1) - 1
            out.append(self._replacements[branch])
            position = match.end()
            self.count += 1
            self.found[self._names[branch]] = self.found.get(self._names[branch], 0) + 1
        cut = max(position, until)
        out.append(data[position:cut])
        return b"".join(out), cut

    def feed(self, chunk: bytes) -> bytes:
        data = self._tail + chunk
        safe = len(data) - (self.window - 1)
        if safe <= 0:
            self._tail = data
            return b""
        out, cut = self._replace(data, safe)
        self._tail = data[cut:]
        return out

    def finish(self) -> bytes:
        """What was held back, scrubbed: the stream has ended."""
        data, self._tail = self._tail, b""
        return self._replace(data, len(data))[0]

    def whole(self, data: bytes) -> bytes:
        """`data`, a value complete in itself (a header's), scrubbed."""
        return self._replace(data, len(data))[0]


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


# The most `Basic` users one request's answer is scrubbed for by name: each adds whole
# patterns, compiled and run on the proxy's event loop (900 made one answer take 8 s
# and stalled every other call's proxying); past it the value's base64 at each
# alignment is still looked for.
BASIC_USERS_MAX = 4


def basic_users(
    headers: Iterable[tuple[bytes, bytes]], placeholders: Iterable[str] = ()
) -> tuple[str, ...]:
    """The users the `Basic` credentials among `headers` name whose password holds one
    of `placeholders` (where a real value is put, so the blob an origin may echo is
    base64 of `user:value`): the first BASIC_USERS_MAX of them."""
    wanted = [placeholder.encode() for placeholder in placeholders if placeholder]
    users: dict[str, None] = {}
    for _name, value in headers:
        if len(users) >= BASIC_USERS_MAX:
            break
        scheme, _, encoded = value.strip().partition(b" ")
        if scheme.lower() != b"basic":
            continue
        try:
            inside = base64.b64decode(encoded.strip(), validate=True)
        except ValueError:
            continue
        user, colon, password = inside.partition(b":")
        if colon and any(placeholder in password for placeholder in wanted):
            users[user.decode("utf-8", "backslashreplace")] = None
    return tuple(users)


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
