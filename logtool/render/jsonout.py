"""JSON (one document) and JSON Lines output.

A name read from disk that is not UTF-8 (a partition dir b'caf\\xe9-0') reaches us with each byte it could
not decode kept as a lone surrogate (U+DC80..U+DCFF, Python's surrogateescape). A lone surrogate is no
character: a strict UTF-8 stdout refuses it, and JSON's "\\udce9" is rejected or turned into U+FFFD by most
parsers. Text and JSON alike show each such byte as Python's backslashreplace shows it: `caf\\xe9-0`."""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from typing import Any

from logtool import __version__

_UNDECODED = re.compile("[\udc80-\udcff]")
_UNDECODED_IN_JSON = "\\udc"  # how json.dumps writes such a byte, and a cheap test for one


def undecoded_escaped(s: str) -> str:
    """`s` with each undecodable byte of a name written as `\\xNN`."""
    return _UNDECODED.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", s)


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return undecoded_escaped(value)
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escaped(v) for v in value]
    return value


def _dumps(doc: Any, **options: Any) -> str:
    text = json.dumps(doc, **options)
    # Almost never true, and then most often for a character outside the BMP (a surrogate pair): the
    # document is written again with its names escaped, which leaves every proper character as it was.
    if _UNDECODED_IN_JSON in text:
        text = json.dumps(_escaped(doc), **options)
    return text


def versioned(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with the version of logtool that wrote it, so that a saved report says what produced it."""
    return {**doc, "logtool_version": __version__}


def emit_json(doc: dict[str, Any]) -> None:
    sys.stdout.write(_dumps(versioned(doc), indent=2))
    sys.stdout.write("\n")


def emit_jsonl(rows: Iterable[dict[str, Any]]) -> None:
    """One document a line; the closing summary row carries the version."""
    for row in rows:
        sys.stdout.write(_dumps(versioned(row) if row.get("type") == "summary" else row, separators=(",", ":")))
        sys.stdout.write("\n")
