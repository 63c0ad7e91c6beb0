"""The checkpoint reader's column-at-a-time path for files in Kafka's own form (format/meta.py `_plain_entries`)
against its line-by-line reader, Kafka's CheckpointFile rule for rule: one answer, or one error, for every text."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logtool.format import meta
from logtool.format.meta import INT, LONG, TEXT, MetaError, parse_checkpoint

FIELDS = [(TEXT, INT, LONG), (INT, LONG)]
# What lines are made of: the form Kafka writes, and what breaks it (signs, padding, other Java spaces, numbers
# past an int or a long, characters Python's \S and Java's \S disagree on).
NUMBERS = st.sampled_from(["0", "7", "007", "+1", "-1", "2147483647", "2147483648", "9223372036854775807",
                           "9223372036854775808", "", "x", "１"])
NAMES = st.sampled_from(["orders", "a.b_c-d", "__consumer_offsets", "t\u00a0x", "t\x1cx", "é", "", "a b"])
SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\t", "\x0b", "\u00a0"])


PLAIN_NUMBERS = st.integers(0, 2**31 - 1).map(str)
PLAIN_NAMES = st.sampled_from(["orders", "a.b_c-d", "__consumer_offsets"])


@st.composite
def checkpoints(draw, fields):
    """Mostly Kafka's own form, each part of it broken now and then."""
    def odd() -> bool:
        return draw(st.integers(0, 11)) == 0

    lines = []
    for _ in range(draw(st.integers(0, 6))):
        values = [draw(NAMES if odd() else PLAIN_NAMES) if f is TEXT else draw(NUMBERS if odd() else PLAIN_NUMBERS)
                  for f in fields]
        lines.append((draw(SEPARATORS) if odd() else " ").join(values))
    count = draw(st.sampled_from([str(len(lines) + 1), str(max(0, len(lines) - 1)), "x"])) if odd() \
        else str(len(lines))
    version = draw(st.sampled_from(["1", "00", ""])) if odd() else "0"
    head = [version] if odd() else [version, count]
    end = draw(st.sampled_from(["\r\n", ""])) if odd() else "\n"
    return "\n".join(head + lines) + (end if head + lines else "")


def _answer(text: str, fields) -> object:
    try:
        return parse_checkpoint(text, fields)
    except MetaError as e:
        return str(e)


@pytest.mark.parametrize("fields", FIELDS)
def test_both_readers_give_one_answer(fields):
    columns = []

    @settings(max_examples=400, deadline=None)
    @given(data=st.data())
    def one_answer(data):
        text = data.draw(checkpoints(fields))
        if meta._plain_entries(text, fields):
            columns.append(text)
        plain = _answer(text, fields)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(meta, "_plain_entries", lambda text, fields: None)
            assert plain == _answer(text, fields)

    one_answer()
    assert len(columns) > 50  # the column path answered for many of them, not only the line reader


def test_kafkas_own_form_is_read_a_column_at_a_time():
    text = "0\n3\norders 0 10\norders 1 2147483647\nt.x-y 5 9223372036854775807\n"
    assert meta._plain_entries(text, (TEXT, INT, LONG)) == (("orders", 0, 10), ("orders", 1, 2147483647),
                                                           ("t.x-y", 5, 9223372036854775807))
    assert meta._plain_entries("0\n1\n0 0\n", (INT, LONG)) == ((0, 0),)
    # Past an int, a count the lines do not match: left to the line reader, which words the error.
    assert meta._plain_entries("0\n1\norders 2147483648 0\n", (TEXT, INT, LONG)) is None
    assert meta._plain_entries("0\n2\norders 0 0\n", (TEXT, INT, LONG)) is None
