"""Key and value decoders for `logtool dump`: how record bytes are shown, as text and in JSON.

Built in: `utf8` (invalid bytes escaped as \\xNN, never an exception), `hex`, `base64`, `json` (pretty in
text) and `none` (not shown). More can be installed as plugins: a distribution declares an entry point in
the group `logtool.reads.decoders` whose name is the decoder name and whose object is a `Decoder` subclass (or
any zero-argument callable returning a `Decoder`). Plugins are loaded only when a name is not built in.
"""
from __future__ import annotations

import binascii
import codecs
import json
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring_ascii

from logtool.format import java_utf8

ENTRY_POINT_GROUP = "logtool.decoders"


class DecoderError(Exception):
    """No decoder has this name, or a plugin could not be loaded."""


class Decoder:
    """Turns the bytes of a key, a value or a header value into what a dump shows.

    `text` is used by text output; `json_fragment` must return one JSON value (already encoded) for
    JSON output. A subclass overrides `text` and, where it knows a cheaper way, `json_fragment`.
    """

    shown = True  # False: the bytes are not shown at all (text omits them, JSON says null)

    def text(self, data: bytes) -> str:
        raise NotImplementedError

    def json_fragment(self, data: bytes) -> str:
        return encode_basestring_ascii(self.text(data))

    def json_pieces(self, data: bytes) -> Iterator[str]:
        """The JSON fragment in pieces, for a value too large to hold as one string (its encoding can be five
        times its size). A decoder that cannot cut its output gives it whole."""
        yield self.json_fragment(data)

    def text_pieces(self, data: bytes) -> Iterator[str]:
        """`text` in pieces, for the same reason."""
        yield self.text(data)


PIECE = 1 << 20  # bytes of a large value encoded at a time


class Utf8(Decoder):
    """UTF-8, bytes that are not shown escaped (\\xNN): visible and exact."""

    errors = "backslashreplace"

    def text(self, data: bytes) -> str:
        return data.decode("utf-8", self.errors)

    # One call, not the default's two: JSON rendering is a large share of a dump (bench/results/dump.md).
    def json_fragment(self, data: bytes) -> str:
        return encode_basestring_ascii(data.decode("utf-8", self.errors))

    def json_pieces(self, data: bytes) -> Iterator[str]:
        yield '"'
        for text in self.text_pieces(data):
            yield encode_basestring_ascii(text)[1:-1]
        yield '"'

    def text_pieces(self, data: bytes) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")(self.errors)  # a character may span two pieces
        view = memoryview(data)
        for at in range(0, len(data), PIECE):
            yield decoder.decode(view[at : at + PIECE])
        yield decoder.decode(b"", final=True)


class JavaString(Utf8):
    """What kafka-dump-log prints (Kafka's StringDecoder, Java's `new String(bytes, UTF_8)`): bytes that are
    not UTF-8 become U+FFFD, as many as Java puts."""

    errors = java_utf8.ERRORS


class _AsciiText(Decoder):
    """A decoder whose text is plain ASCII that JSON needs no escape for: its JSON is the text, quoted."""

    def json_fragment(self, data: bytes) -> str:
        return f'"{self.text(data)}"'

    def json_pieces(self, data: bytes) -> Iterator[str]:
        yield '"'
        yield from self.text_pieces(data)
        yield '"'


class Hex(_AsciiText):
    def text(self, data: bytes) -> str:
        return data.hex()

    def text_pieces(self, data: bytes) -> Iterator[str]:
        for at in range(0, len(data), PIECE):
            yield data[at : at + PIECE].hex()


class Base64(_AsciiText):
    def text(self, data: bytes) -> str:
        return binascii.b2a_base64(data, newline=False).decode("ascii")

    def text_pieces(self, data: bytes) -> Iterator[str]:
        step = PIECE - PIECE % 3  # whole 3-byte groups: the pieces join into one base64 text
        for at in range(0, len(data), step):
            yield binascii.b2a_base64(data[at : at + step], newline=False).decode("ascii")


class Json(Decoder):
    """JSON documents: pretty-printed in text, embedded as JSON values in JSON output. Bytes that are not
    JSON are shown as `utf8` would show them (a JSON string in JSON output)."""

    def text(self, data: bytes) -> str:
        try:
            return json.dumps(json.loads(data), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            return Utf8().text(data)

    def json_fragment(self, data: bytes) -> str:
        try:
            return json.dumps(json.loads(data), separators=(",", ":"))
        except (ValueError, RecursionError):
            return Utf8().json_fragment(data)

    # Parsing a document of many megabytes takes many times its size: a value over a piece is shown as utf8
    # shows it (a JSON string), a piece at a time.
    def json_pieces(self, data: bytes) -> Iterator[str]:
        return Utf8().json_pieces(data)

    def text_pieces(self, data: bytes) -> Iterator[str]:
        return Utf8().text_pieces(data)


class Hidden(Decoder):
    """`none`: the bytes are not shown (their sizes still are)."""

    shown = False

    def text(self, data: bytes) -> str:
        return ""

    def json_fragment(self, data: bytes) -> str:
        return "null"


# How the compiled kernel (format/_kernel.c, `enum mode`) renders each built-in decoder it knows, by exact
# type: a subclass or a plugin may change what it shows, so it is rendered by its own methods.
_KERNEL_MODES: dict[type, int] = {Hidden: 0, Utf8: 1, JavaString: 2, Hex: 3}
NOT_SHOWN = -1  # the kernel's mode for text without keys and payloads


def kernel_mode(decoder: Decoder) -> int | None:
    """The kernel's mode for this decoder, None where only the decoder itself can render."""
    return _KERNEL_MODES.get(type(decoder))


BUILT_IN: dict[str, Callable[[], Decoder]] = {"utf8": Utf8, "string": JavaString, "hex": Hex, "base64": Base64,
                                              "json": Json, "none": Hidden}


def _plugins():
    from importlib.metadata import entry_points  # a sixth of a command's start-up: only where a plugin is named

    return entry_points(group=ENTRY_POINT_GROUP)


def names() -> list[str]:
    """Every decoder name: built in, then installed plugins."""
    plugins = sorted(ep.name for ep in _plugins() if ep.name not in BUILT_IN)
    return list(BUILT_IN) + plugins


def get(name: str) -> Decoder:
    """The decoder called `name`. Raises DecoderError with the names that exist."""
    if name in BUILT_IN:
        return BUILT_IN[name]()
    found = [ep for ep in _plugins() if ep.name == name]
    if not found:
        raise DecoderError(f"no decoder named {name!r} (known: {', '.join(names())})")
    try:
        decoder = found[0].load()()
    except Exception as e:  # a broken plugin is the user's environment: one line, not a traceback
        raise DecoderError(f"decoder plugin {name!r} cannot be loaded: {type(e).__name__}: {e}") from None
    if not isinstance(decoder, Decoder):
        raise DecoderError(f"decoder plugin {name!r} did not give a logtool.reads.decoders.Decoder")
    return decoder
