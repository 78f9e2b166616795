"""Answer scrubbing, the pure part (issue 41): every echoed form of a real value is
found and replaced, in a header or a body fed in any chunks, after gzip or deflate is
undone; a decompression bomb is stopped; codings the proxy cannot undo are refused."""

from __future__ import annotations

import base64
import gzip
import html
import json
import random
import re
import urllib.parse
import zlib

import pytest

from stockade.network._scrub import (
    INFLATE_FLOOR,
    AnswerScrub,
    Decoder,
    Scrubber,
    ScrubError,
    Secretive,
    request_headers,
)

VALUE = "s3cr3t/VALUE+with space&more:42_x"
PLACEHOLDER = "stockade-placeholder-" + "ab" * 20
SECRET = Secretive(VALUE, PLACEHOLDER)


def scrub(data: bytes, secret: Secretive = SECRET) -> tuple[bytes, int]:
    scrubber = Scrubber([secret])
    out = scrubber.whole(data)
    return out, scrubber.count


def percent_all(text: str, upper: bool) -> str:
    escaped = "".join(f"%{ord(char):02X}" for char in text)
    return escaped if upper else escaped.lower()


def json_unicode(text: str) -> str:
    return "".join(f"\\u{ord(char):04x}" for char in text)


def b64_at(text: str, shift: int, encode=base64.b64encode) -> bytes:
    return encode(b"ab"[:shift] + text.encode() + b"zz")


FORMS: dict[str, bytes] = {
    "raw": VALUE.encode(),
    "json escapes": json.dumps(VALUE).encode(),  # `\/` is not json.dumps's, see below
    "json slash": VALUE.replace("/", "\\/").encode(),
    "json unicode": json_unicode(VALUE).encode(),
    "json ascii": json.dumps(VALUE + "é", ensure_ascii=True).encode(),
    "percent quote_plus": urllib.parse.quote_plus(VALUE).encode(),
    "percent quote": urllib.parse.quote(VALUE, safe="").encode(),
    "percent lower": re.sub(
        "%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(VALUE, safe="")
    ).encode(),
    "percent every byte upper": percent_all(VALUE, True).encode(),
    "percent every byte lower": percent_all(VALUE, False).encode(),
    "html escape": html.escape(VALUE).encode(),
    "html decimal": "".join(f"&#{ord(c)};" for c in VALUE).encode(),
    "html decimal zeros": "".join(f"&#00{ord(c)};" for c in VALUE).encode(),
    "html hex": "".join(f"&#x{ord(c):x};" for c in VALUE).encode(),
    "html hex upper": "".join(f"&#X{ord(c):X};" for c in VALUE).encode(),
    "html named": VALUE.replace("/", "&sol;")
    .replace(":", "&colon;")
    .replace("_", "&lowbar;")
    .replace("&m", "&amp;m")
    .encode(),
    "mixed": (
        VALUE[:5]
        + percent_all(VALUE[5:9], True)
        + json_unicode(VALUE[9:14])
        + "".join(f"&#{ord(c)};" for c in VALUE[14:20])
        + VALUE[20:]
    ).encode(),
    "utf-16-le": VALUE.encode("utf-16-le"),
    "utf-16-be": VALUE.encode("utf-16-be"),
    "base64 shift 0": b64_at(VALUE, 0),
    "base64 shift 1": b64_at(VALUE, 1),
    "base64 shift 2": b64_at(VALUE, 2),
    "base64url shift 0": b64_at(VALUE, 0, base64.urlsafe_b64encode),
    "base64url shift 1": b64_at(VALUE, 1, base64.urlsafe_b64encode),
    "base64url shift 2": b64_at(VALUE, 2, base64.urlsafe_b64encode),
    "basic blob": b"Basic " + base64.b64encode(f"x-access-token:{VALUE}".encode()),
    "basic blob of another user": base64.b64encode(f"someone:{VALUE}".encode()),
}


def holds_value(data: bytes) -> bool:
    """Whether any form of VALUE is still in `data` (decoding what can be decoded)."""
    if VALUE.encode() in data:
        return True
    texts = [data.decode("latin-1")]
    texts.append(urllib.parse.unquote_plus(texts[0]))
    texts.append(html.unescape(texts[0]))
    texts.append(
        re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), texts[0])
        .replace("\\/", "/")
        .replace('\\"', '"')
    )
    texts.append(html.unescape(urllib.parse.unquote(texts[-1])))  # a mix of them
    for start in (0, 1):
        texts.append(data[start:].decode("utf-16-le", "replace"))
        texts.append(data[start:].decode("utf-16-be", "replace"))
    if any(VALUE in text for text in texts):
        return True
    for token in data.replace(b"Basic ", b" ").split():
        for start in range(4):
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                try:
                    piece = token[start:]
                    decoded = decode(piece + b"=" * (-len(piece) % 4))
                except ValueError:
                    continue
                if VALUE.encode()[3:-3] in decoded:
                    return True
    return False


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_is_found_and_replaced(form: str):
    data = b"before " + FORMS[form] + b" after"
    assert holds_value(data), form  # the control: the form does carry the value
    out, count = scrub(data)
    assert count == 1, (form, out)
    assert not holds_value(out), (form, out)
    assert out.startswith(b"before ") and out.endswith(b" after"), out


def test_textual_forms_are_replaced_by_the_placeholder_itself():
    for form in ("raw", "json unicode", "percent quote", "html decimal", "mixed"):
        out, _ = scrub(b"[" + FORMS[form] + b"]")
        assert out == f"[{PLACEHOLDER}]".encode(), form
    out, _ = scrub(FORMS["basic blob"])
    assert out == b"Basic " + base64.b64encode(f"x-access-token:{PLACEHOLDER}".encode())
    out, _ = scrub(FORMS["utf-16-le"])
    assert out == PLACEHOLDER.encode("utf-16-le")


def test_every_occurrence_is_replaced_and_counted():
    data = b"|".join(FORMS[form] for form in sorted(FORMS)) * 3
    out, count = scrub(data)
    assert count == 3 * len(FORMS)
    assert not holds_value(out)


def test_text_without_the_value_passes_unchanged():
    rng = random.Random(41)
    data = bytes(rng.randrange(256) for _ in range(200_000))
    data += (VALUE[:-1] + " " + VALUE[1:]).encode()  # near misses
    data += json.dumps({"token": VALUE[::-1]}).encode()  # reversed: not a form we find
    out, count = scrub(data)
    assert (out, count) == (data, 0)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 4096])
def test_a_value_split_across_chunks_is_found(size: int):
    forms = [FORMS[form] for form in sorted(FORMS)]
    data = b"x" * 5 + b"...".join(forms) + b"y" * 5
    scrubber = Scrubber([SECRET])
    out = b"".join(scrubber.feed(data[i : i + size]) for i in range(0, len(data), size))
    out += scrubber.finish()
    assert scrubber.count == len(forms)
    assert not holds_value(out)
    assert out == Scrubber([SECRET]).whole(data)


def test_what_is_held_back_is_at_most_the_window():
    scrubber = Scrubber([SECRET])
    passed = scrubber.feed(b"a" * 10_000)
    # The window less a byte, and the three characters a base64 core's group may
    # begin with (replaced with it when the core comes next read).
    assert len(passed) == 10_000 - (scrubber.window - 1) - 3
    assert passed + scrubber.finish() == b"a" * 10_000


def test_several_credentials_and_a_marker_for_the_header_form():
    other = Secretive("another-real-value-777", "stockade-withheld-KEY")
    scrubber = Scrubber([SECRET, other])
    out = scrubber.whole(b"a=" + VALUE.encode() + b" b=another-real-value-777")
    assert out == f"a={PLACEHOLDER} b=stockade-withheld-KEY".encode()
    assert scrubber.count == 2


def test_request_headers_ask_identity_and_no_range():
    headers = [
        (b"accept-encoding", b"gzip, br"),
        (b"Range", b"bytes=5-9"),
        (b"if-range", b'"x"'),
        (b"accept", b"*/*"),
    ]
    assert request_headers(headers) == [(b"accept", b"*/*"), (b"accept-encoding", b"identity")]


def _answer(status: int, headers: list[tuple[bytes, bytes]], body: bytes, *, chunk: int = 5):
    scrub = AnswerScrub([SECRET], "api.test")
    head = scrub.head(status, headers, head_request=False)
    out = b"".join(
        piece for i in range(0, len(body), chunk) for piece in scrub.body(body[i : i + chunk])
    )
    return head, out + scrub.end(), scrub.count


def test_headers_and_the_reason_are_scrubbed_and_the_body_re_framed():
    scrub = AnswerScrub([SECRET], "api.test")
    assert scrub.reason(b"Bad token " + VALUE.encode()) == b"Bad token " + PLACEHOLDER.encode()
    head, body, count = _answer(
        200,
        [
            (b"set-cookie", b"t=" + FORMS["percent quote"] + b"; Path=/"),
            (b"location", b"https://x.test/?t=" + FORMS["percent quote_plus"]),
            (b"x-" + VALUE.encode()[:6], b"plain"),
            (b"content-length", b"999"),
        ],
        b'{"echo": ' + FORMS["json escapes"] + b"}",
    )
    assert (b"set-cookie", f"t={PLACEHOLDER}; Path=/".encode()) in head
    assert (b"location", f"https://x.test/?t={PLACEHOLDER}".encode()) in head
    assert all(name != b"content-length" for name, _ in head)
    assert body == f'{{"echo": "{PLACEHOLDER}"}}'.encode()
    assert count == 3


def test_a_header_whose_name_holds_the_value_is_dropped():
    scrub = AnswerScrub([SECRET], "api.test")
    head = scrub.head(204, [(b"x-" + FORMS["percent quote"], b"1")], head_request=False)
    assert head == [] and scrub.count == 1


def test_bodiless_answers_keep_their_framing():
    for status, head_request in ((200, True), (304, False), (204, False)):
        scrub = AnswerScrub([SECRET], "api.test")
        headers = [(b"content-length", b"42"), (b"content-encoding", b"br")]
        assert scrub.head(status, headers, head_request=head_request) == headers


@pytest.mark.parametrize("coding", ["gzip", "x-gzip", "deflate", "raw deflate"])
def test_a_compressed_body_is_undone_and_scrubbed(coding: str):
    plain = b"start " + b" ".join(FORMS[form] for form in sorted(FORMS)) + b" end" * 1000
    if coding in ("gzip", "x-gzip"):
        packed = gzip.compress(plain)
    elif coding == "deflate":
        packed = zlib.compress(plain)
    else:
        squeezer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        packed = squeezer.compress(plain) + squeezer.flush()
    name = coding.removeprefix("raw ").encode()
    head, body, count = _answer(200, [(b"content-encoding", name)], packed, chunk=1)
    assert head == []  # the coding is undone, the length re-framed
    assert count == len(FORMS)
    assert not holds_value(body)
    assert body.startswith(b"start ") and body.endswith(b" end" * 1000)


def test_gzip_members_one_after_another():
    packed = gzip.compress(b"one " + VALUE.encode()) + gzip.compress(b" two")
    _, body, count = _answer(200, [(b"content-encoding", b"gzip")], packed)
    assert body == f"one {PLACEHOLDER} two".encode() and count == 1


def test_a_decompression_bomb_is_stopped_with_bounded_output():
    squeezer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    zeros = bytes(1 << 20)
    packed = b"".join(squeezer.compress(zeros) for _ in range(256)) + squeezer.flush()
    assert len(packed) < (1 << 20)  # 256 MiB in well under 1 MiB: the control
    decoder = Decoder("gzip")
    written = 0
    with pytest.raises(ScrubError, match="inflates past"):
        for offset in range(0, len(packed), 16384):
            for piece in decoder.feed(packed[offset : offset + 16384]):
                assert len(piece) <= 65536
                written += len(piece)
    assert written <= INFLATE_FLOOR + 200 * len(packed)
    assert written < 64 << 20


def test_a_corrupt_or_cut_body_is_an_error():
    with pytest.raises(ScrubError, match="corrupt"):
        list(Decoder("gzip").feed(b"\x1f\x8b\x08\x00garbage" * 10))
    decoder = Decoder("gzip")
    list(decoder.feed(gzip.compress(b"x" * 1000)[:20]))
    with pytest.raises(ScrubError, match="ended before"):
        decoder.finish()


@pytest.mark.parametrize("coding", [b"br", b"zstd", b"compress", b"gzip, gzip", b"gzip, br"])
def test_a_coding_the_proxy_cannot_undo_is_refused(coding: bytes):
    scrub = AnswerScrub([SECRET], "api.test")
    with pytest.raises(ScrubError) as refused:
        scrub.head(200, [(b"content-encoding", coding)], head_request=False)
    line = str(refused.value)
    assert "api.test" in line and "cannot undo" in line and "\n" not in line


def test_identity_needs_nothing():
    head, body, count = _answer(200, [(b"content-encoding", b"identity")], VALUE.encode())
    assert head == [(b"content-encoding", b"identity")] or head == []
    assert body == PLACEHOLDER.encode() and count == 1


def test_a_short_value_has_no_base64_forms_but_is_still_found():
    short = Secretive("k3y", "stockade-placeholder-" + "0" * 40)
    scrubber = Scrubber([short])
    assert scrubber.whole(b"a k3y b %6B%33%79") == (
        b"a " + short.replacement.encode() + b" b " + short.replacement.encode()
    )
