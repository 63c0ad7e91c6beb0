"""Java's `new String(bytes, UTF_8)` for Python: the codec error handler `ERRORS` (registered on import)
puts U+FFFD where Java does, as many as Java puts. Kafka's tools decode keys, values and every string of its
messages so."""
from __future__ import annotations

import codecs


def _cont(b: int) -> bool:
    return b & 0xC0 == 0x80


def _bad_second_of_three(b1: int, b2: int) -> bool:
    """Whether `b2` cannot follow `b1` in a three-byte sequence (overlong forms start E0 80-9F)."""
    return (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _cont(b2)


def _bad_second_of_four(b1: int, b2: int) -> bool:
    """Whether `b2` cannot follow `b1` in a four-byte sequence (overlong below F0 90, beyond U+10FFFF past F4 8F)."""
    return b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) or not _cont(b2)


def _java_malformed(data: bytes, at: int) -> int:
    """Where Java's `new String(bytes, UTF_8)` (JDK 17's decoder) goes on after the malformed input that
    starts at `at`, having put one U+FFFD for it. Java and Python agree on what is valid, not on how many
    bytes one U+FFFD stands for: Java gives one for a surrogate's three bytes and one for a truncated
    sequence at the end, where Python gives one per maximal subpart."""
    n, b1 = len(data), data[at]
    rest = n - at - 1
    if 0xC2 <= b1 <= 0xDF:  # two bytes: the second is not a continuation (a truncated one ends the input)
        return at + 1 if rest else n
    if 0xE0 <= b1 <= 0xEF:
        if rest >= 2:
            b2, b3 = data[at + 1], data[at + 2]
            if _bad_second_of_three(b1, b2):
                return at + 1
            return at + 2 if not _cont(b3) else at + 3  # else: a surrogate, all three bytes
        if rest == 1 and _bad_second_of_three(b1, data[at + 1]):
            return at + 1
        return n
    if 0xF0 <= b1 <= 0xF7:
        if rest >= 3:
            if _bad_second_of_four(b1, data[at + 1]):
                return at + 1
            return at + 2 if not _cont(data[at + 2]) else at + 3
        if b1 > 0xF4 or (rest >= 1 and _bad_second_of_four(b1, data[at + 1])):
            return at + 1
        if rest >= 2 and not _cont(data[at + 2]):
            return at + 2
        return n
    return at + 1  # a continuation byte, or a byte no sequence starts with


def _java_replace(e: UnicodeError) -> tuple[str, int]:
    # codecs.register_error's handlers take every UnicodeError; ERRORS is only ever named to decode
    assert isinstance(e, UnicodeDecodeError), e
    return "\ufffd", _java_malformed(e.object, e.start)


ERRORS = "logtool-java-string"
codecs.register_error(ERRORS, _java_replace)
