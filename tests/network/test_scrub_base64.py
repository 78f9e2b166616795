"""Answer scrubbing of base64 echoes (audit of issue 41): a value echoed in base64
leaves nothing of itself (not the characters it shares with its neighbours, not its
last partial group or padding); a `Basic` blob is found whatever the user, with a
pattern compiled once per set of credentials (a fresh user per request made the
proxy recompile on its event loop); and no user, however long, makes the scan
backtrack (a user of 'a' * 9000 made one MiB of 'YWFh' take 15 s)."""

from __future__ import annotations

import base64
import time

import pytest

from stockade.network._scrub import (
    RUN_LIMIT,
    Scrubber,
    ScrubError,
    Secretive,
    _base64_core,
    _plan,
)

VALUE = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
# The same length, differing in the first byte's top bits and in the last two bytes:
# what a partial replacement lets through tells them apart.
OTHER = "Whp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7zz"
PLACEHOLDER = "stockade-placeholder-" + "0" * 40
ENCODINGS = {"base64": base64.b64encode, "base64url": base64.urlsafe_b64encode}


def scrubbed(value: str, data: bytes) -> tuple[bytes, int]:
    scrubber = Scrubber([Secretive(value, PLACEHOLDER, "T")])
    return scrubber.whole(data), scrubber.count


def echoes(value: str) -> list[bytes]:
    """`value` echoed in base64 every way the audit tried: after each prefix (each
    alignment), whole or cut after the value, padded or not, in either alphabet, in
    JSON or at the edges of the text."""
    found = []
    for encode in ENCODINGS.values():
        for prefix in (b"", b"B", b"Be", b"Bearer ", b"Bearer  ", b"Bearer   "):
            for suffix in (b"", b"!", b"?x", b"\x00\x01\x02"):
                blob = encode(prefix + value.encode() + suffix)
                for framed in (blob, blob.rstrip(b"=")):
                    found += [framed, b'{"seen": "' + framed + b'"}', b"x " + framed]
    return found


def test_no_bit_of_a_base64_echo_survives():
    """Scrubbed, the echo of VALUE and the echo of OTHER read the same: nothing the
    command reads depends on the value. The control: replacing only the characters
    the value alone decides (what the proxy did) leaves them different, and the last
    group decodes to the value's last bytes."""
    for echo, other in zip(echoes(VALUE), echoes(OTHER), strict=True):
        out, count = scrubbed(VALUE, echo)
        assert count == 1, echo
        assert out == scrubbed(OTHER, other)[0], echo
    echo = base64.b64encode(b"Bearer " + VALUE.encode())
    cores = [
        (_base64_core(value.encode(), 1, False), _base64_core(PLACEHOLDER.encode(), 1, False))
        for value in (VALUE, OTHER)
    ]
    core_only = [
        blob.replace(core, wanted)
        for blob, (core, wanted) in zip(
            (echo, base64.b64encode(b"Bearer " + OTHER.encode())), cores, strict=True
        )
    ]
    assert core_only[0] != core_only[1]
    assert base64.b64decode(core_only[0][-4:]).endswith(VALUE.encode()[-1:])


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_base64_echo_reads_back_as_the_placeholder_in_its_framing(name: str):
    encode = ENCODINGS[name]
    for prefix in (b"", b"Bearer ", b"token=x&", b"x-access-token:"):
        for suffix in (b"", b"\n", b"; rest of it"):
            echo = encode(prefix + VALUE.encode() + suffix)
            out, count = scrubbed(VALUE, b"[" + echo + b"]")
            assert count == 1
            assert out == b"[" + encode(prefix + PLACEHOLDER.encode() + suffix) + b"]"
            bare = echo.rstrip(b"=")
            out, _ = scrubbed(VALUE, b"[" + bare + b"]")
            assert out == b"[" + encode(prefix + PLACEHOLDER.encode() + suffix).rstrip(b"=") + b"]"


def test_a_run_holding_the_value_twice_or_two_values_loses_both():
    other = Secretive("another-real-value-777", "stockade-withheld-KEY", "KEY")
    scrubber = Scrubber([Secretive(VALUE, PLACEHOLDER, "T"), other])
    inside = f"{VALUE}|{VALUE}{VALUE} and another-real-value-777.".encode()
    out = scrubber.whole(b"<" + base64.b64encode(inside) + b">")
    wanted = f"{PLACEHOLDER}|{PLACEHOLDER}{PLACEHOLDER} and stockade-withheld-KEY.".encode()
    assert out == b"<" + base64.b64encode(wanted) + b">"
    assert scrubber.found == {"T": 3, "KEY": 1}


@pytest.mark.parametrize("size", [1, 3, 7, 64, 1000])
def test_a_base64_echo_split_across_chunks_is_replaced_whole(size: int):
    data = b"".join(b"<" + echo + b">" for echo in echoes(VALUE)[:60]) + b"end"
    scrubber = Scrubber([Secretive(VALUE, PLACEHOLDER, "T")])
    out = b"".join(scrubber.feed(data[i : i + size]) for i in range(0, len(data), size))
    out += scrubber.finish()
    assert out == Scrubber([Secretive(VALUE, PLACEHOLDER, "T")]).whole(data)
    assert scrubber.count == 60


def test_a_basic_blob_is_replaced_whatever_the_user_and_long():
    for user in ("x-access-token", "git", "a" * 3000, "ü" * 300, ""):
        blob = base64.b64encode(f"{user}:{VALUE}".encode())
        out, count = scrubbed(VALUE, b"Basic " + blob)
        assert count == 1, user
        assert out == b"Basic " + base64.b64encode(f"{user}:{PLACEHOLDER}".encode())


def test_the_pattern_is_compiled_once_whatever_the_users_named():
    """Nothing a request names goes into the pattern: a thousand fresh users, one
    compile (the control: the first scrubber did compile)."""
    _plan.cache_clear()
    secrets = [Secretive(VALUE, PLACEHOLDER, "T")]
    for index in range(1000):
        blob = base64.b64encode(f"user{index}:{VALUE}".encode())
        assert Scrubber(secrets).whole(blob) == base64.b64encode(
            f"user{index}:{PLACEHOLDER}".encode()
        )
    assert _plan.cache_info().misses == 1
    assert _plan.cache_info().hits == 999


def test_a_long_user_makes_no_backtracking():
    """A mebibyte repeating what a long user's blob begins with ('YWFh'), then the
    blob: scanned at the pace of a neutral body (a generous ratio; the proxy took 300
    times as long), and the blob still replaced."""
    secrets = [Secretive(VALUE, PLACEHOLDER, "T")]
    blob = base64.b64encode(("a" * 9000 + ":" + VALUE).encode())

    def pace(body: bytes) -> float:
        scrubber = Scrubber(secrets)
        began = time.process_time()
        out = b"".join(scrubber.feed(body[i : i + 65536]) for i in range(0, len(body), 65536))
        out += scrubber.finish()
        took = time.process_time() - began
        assert out.endswith(b" " + base64.b64encode(("a" * 9000 + ":" + PLACEHOLDER).encode()))
        return took

    control = min(pace(b"x" * (1 << 20) + b" " + blob) for _ in range(3))
    attack = min(pace(b"YWFh" * (1 << 18) + b" " + blob) for _ in range(3))
    assert attack < 10 * control + 0.05


def test_a_base64_run_holding_the_value_past_the_limit_is_refused():
    """What is decoded and encoded again is bounded: a longer run holding the value
    cuts the answer (held back whole, it would have to be held without end)."""
    echo = base64.b64encode(VALUE.encode() + b"x" * RUN_LIMIT)
    scrubber = Scrubber([Secretive(VALUE, PLACEHOLDER, "T")])
    with pytest.raises(ScrubError, match="base64 run"):
        for offset in range(0, len(echo), 4096):
            scrubber.feed(echo[offset : offset + 4096])
        scrubber.finish()
    # Ordinary base64 that holds no value passes, however long.
    plain = base64.b64encode(b"x" * 4 * RUN_LIMIT)
    assert scrubbed(VALUE, plain) == (plain, 0)


def test_the_value_glued_to_its_own_base64_is_found_too():
    """The value is base64 characters: following its own base64 it is part of the run,
    which is decoded and encoded again. It ends the run where it begins, and is
    replaced as itself (the control: decoded whole, the run held it unseen)."""
    glued = base64.b64encode(b"abc" + VALUE.encode() + b"xyz") + VALUE.encode() + b"!"
    assert VALUE.encode() in glued
    out, count = scrubbed(VALUE, glued)
    assert count == 2
    wanted = base64.b64encode(b"abc" + PLACEHOLDER.encode() + b"xyz")
    assert out == wanted + PLACEHOLDER.encode() + b"!"
    # In any chunks.
    scrubber = Scrubber([Secretive(VALUE, PLACEHOLDER, "T")])
    fed = b"".join(scrubber.feed(glued[i : i + 5]) for i in range(0, len(glued), 5))
    assert fed + scrubber.finish() == out


def test_two_encodings_glued_together_are_each_replaced():
    """Unpadded base64 of the value glued to another at another alignment is one run
    of base64 characters: decoded from the first value's group, the second read as
    garbage and passed on (the control); each is decoded on its own."""
    for first, second in ((b"", b"ab"), (b"ab", b""), (b"abc", b"a")):
        one = base64.b64encode(first + VALUE.encode() + b"z").rstrip(b"=")
        two = base64.urlsafe_b64encode(second + VALUE.encode()).rstrip(b"=")
        glued = one + two
        assert len(one) % 4  # the control: the second is not at the first's alignment
        out, count = scrubbed(VALUE, b"<" + glued + b">")
        assert count == 2
        wanted_one = base64.b64encode(first + PLACEHOLDER.encode() + b"z").rstrip(b"=")
        assert out.startswith(b"<" + wanted_one)
        rest = out[len(b"<" + wanted_one) : -1]
        # The second reads back as its prefix and the placeholder, at its alignment.
        decoded = base64.urlsafe_b64decode(rest + b"=" * (-len(rest) % 4))
        assert decoded == second + PLACEHOLDER.encode()
