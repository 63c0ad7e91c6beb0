"""Kafka's generated messages, read from bytes by their schemas: the keys and values of `__consumer_offsets`,
`__transaction_state` and `__cluster_metadata` records.

A schema (`logtool.format.schemas` gives the form) becomes a `Message`; `Message.read(data, version)` gives
the fields Kafka's generated `*JsonConverter.write(message, version)` would print, in the same order and
under the same names: a field outside the version is left out, a tagged field only where its value is not
the default. Values are Python's JSON types, bytes excepted (kept as `bytes` for a caller that decodes them
further; `jsonable` turns them into base64 text, as Jackson prints a binary node). `jackson` writes such an
object as Kafka's tools print it: compact, characters beyond ASCII as themselves, Java's doubles.

Reading follows the generated `read()`: fixed-size integers big-endian, classic strings with an int16 length
and arrays with an int32 count, compact ones with an unsigned varint of the length plus one in flexible
versions, then each struct's tagged fields (unknown tags skipped). Bad bytes raise `MessageError`, never an
exception of Python's, and no count read from the bytes allocates more than the bytes could hold.

That reading (`Message.read_reference`, `_Reader`) walks the schema for every message. `Message.read` reads by
a reader compiled once per version from the same schema (`logtool.format.message_compiler`), which gives the
same answer faster (bench/results/metadata.md), and turns to the reference for any bytes it cannot read whole.
"""
from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass, field as dc_field
from decimal import Decimal
from typing import NoReturn

from logtool.format import java_utf8
from logtool.format.message_compiler import FAILURES, Reader, compile_reader, version_key
from logtool.format.varint import VarintError, read_unsigned_varint


class MessageError(Exception):
    """The bytes do not hold the message at this version. `str()` gives Kafka's words (those of its
    generated readers and `ByteBufferAccessor`; "null" where Kafka's is a BufferUnderflowException's
    missing message); `detail` says in logtool's words what ran past what."""

    def __init__(self, kafka: str, detail: str | None = None) -> None:
        super().__init__(kafka)
        self.detail = detail or kafka


class SchemaError(Exception):
    """A schema text is not in the form `logtool.format.schemas` describes (a bug here, not bad input)."""


@dataclass(frozen=True, slots=True)
class Versions:
    low: int
    high: int  # inclusive; 0x7fff for "N+"

    @classmethod
    def parse(cls, text: str) -> "Versions":
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), 0x7FFF)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high


_FIXED = {"bool": struct.Struct(">?"), "int8": struct.Struct(">b"), "int16": struct.Struct(">h"),
          "uint16": struct.Struct(">H"), "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"),
          "int64": struct.Struct(">q"), "float64": struct.Struct(">d")}
_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(slots=True)
class Field:
    name: str  # the JSON name: the schema's with a lower-case first letter
    kind: str  # a primitive name, "struct", or "array"
    versions: Versions
    nullable: Versions
    tag: int | None
    tagged: Versions
    default: object
    element: "Field | None" = None  # an array's element (its versions unused)
    fields: "list[Field] | None" = None  # a struct's fields


@dataclass(slots=True)
class Message:
    name: str
    id: int | None
    versions: Versions
    flexible: Versions
    fields: list[Field] = dc_field(default_factory=list)
    # the readers compiled from the schema (`message_compiler`), by `version_key`
    readers: dict[int, Reader] = dc_field(default_factory=dict, repr=False, compare=False)

    def read(self, data: bytes, version: int, pos: int = 0) -> tuple[dict[str, object], int]:
        """The message at `version` from `data[pos:]`: (its fields, the position after it). As Kafka's
        generated `read()`, a version above the schema's is read as its highest reads.

        By the reader compiled for the version; where it cannot read the bytes whole, by the reference
        (`read_reference`), whose answer, or error in Kafka's words, is then the one given."""
        if data.__class__ is bytes:
            reader = self.readers.get(version) or self.compiled(version)
            if reader is not None:
                try:
                    return reader(data, pos, len(data))
                except FAILURES:
                    pass
        return self.read_reference(data, version, pos)

    def compiled(self, version: int) -> Reader | None:
        """The reader compiled for `version` (made on first use); None for a version none is made for."""
        key = version_key(self, version)
        if key is None:
            return None
        reader = self.readers.get(key)
        if reader is None:
            reader = self.readers[key] = compile_reader(self, key)
        return reader

    def read_reference(self, data: bytes, version: int, pos: int = 0) -> tuple[dict[str, object], int]:
        """`read` the simple way: the schema's fields walked for each message (the reference the compiled
        readers are held to)."""
        try:
            return _Reader(data, version, version in self.flexible).struct(self.fields, pos, len(data))
        except VarintError as e:
            too_long = "too long" in str(e)
            raise MessageError("Varint is too long, the most significant bit in the 5th byte is set" if too_long
                               else "null", str(e)) from None


class _Reader:
    def __init__(self, data: bytes, version: int, flexible: bool) -> None:
        self.data, self.version, self.flexible = data, version, flexible

    def struct(self, fields: list[Field], pos: int, end: int) -> tuple[dict[str, object], int]:
        v = self.version
        values: dict[str, object] = {}
        for f in fields:
            if v in f.versions and not (f.tag is not None and v in f.tagged):
                values[f.name], pos = self.value(f, pos, end)
        if self.flexible:
            count, pos = read_unsigned_varint(self.data, pos, end)
            tags = {f.tag: f for f in fields if f.tag is not None and v in f.tagged and v in f.versions}
            for _ in range(count):
                tag, pos = read_unsigned_varint(self.data, pos, end)
                size, pos = read_unsigned_varint(self.data, pos, end)
                if size > end - pos:
                    raise MessageError(_short_array(size, end - pos), f"tagged field {tag} of {size} bytes runs past "
                                                                        f"the {end - pos} bytes left")
                known = tags.get(tag)
                if known is not None:
                    values[known.name], _ = self.value(known, pos, pos + size)
                pos += size
        out = {}
        for f in fields:  # Kafka's order; a tagged field only where it is not the default
            if f.name in values and (f.tag is None or v not in f.tagged or values[f.name] != f.default):
                out[f.name] = values[f.name]
        return out, pos

    def value(self, f: Field, pos: int, end: int) -> tuple[object, int]:
        kind, data = f.kind, self.data
        fixed = _FIXED.get(kind)
        if fixed is not None:
            if pos + fixed.size > end:
                raise _underflow(f, end - pos)
            return fixed.unpack_from(data, pos)[0], pos + fixed.size
        if kind == "uuid":
            if pos + 16 > end:
                raise _underflow(f, end - pos)
            return base64.urlsafe_b64encode(data[pos:pos + 16]).rstrip(b"=").decode("ascii"), pos + 16
        if kind == "struct":
            return self._struct_value(f, pos, end)
        size, pos = self.length(f, pos, end, "int32" if kind in ("bytes", "array") else "int16")
        if size < 0:
            return None, pos
        if kind == "array":
            return self._array(f, size, pos, end)
        return self._bytes(f, size, pos, end)

    def _struct_value(self, f: Field, pos: int, end: int) -> tuple[object, int]:
        if self.version in f.nullable:  # a nullable struct is preceded by a presence byte
            if pos >= end:
                raise _underflow(f, 0)
            if self.data[pos] >= 0x80:  # Kafka reads a negative byte as null
                return None, pos + 1
            pos += 1
        return self.struct(f.fields or [], pos, end)

    def _array(self, f: Field, size: int, pos: int, end: int) -> tuple[object, int]:
        """The `size` elements of an array field from `pos`."""
        if size > end - pos:  # Kafka's check: every element takes a byte or more
            raise MessageError(f"Tried to allocate a collection of size {size}, but there are only {end - pos} "
                               f"bytes remaining.", f"array {f.name} of {size} elements runs past the "
                                                    f"{end - pos} bytes left")
        element = f.element
        assert element is not None, f.name  # _field gives every array its element
        items = []
        for _ in range(size):
            item, pos = self.value(element, pos, end)
            items.append(item)
        return items, pos

    def _bytes(self, f: Field, size: int, pos: int, end: int) -> tuple[object, int]:
        """The `size` bytes of a string or bytes field from `pos`."""
        kind = f.kind
        if kind == "string" and size > 0x7FFF:
            raise MessageError(f"string field {f.name} had invalid length {size}")
        if size > end - pos:
            raise MessageError(_short_array(size, end - pos), f"field {f.name} of {size} bytes runs past the "
                                                              f"{end - pos} bytes left")
        raw = self.data[pos:pos + size]
        if kind == "string":
            return raw.decode("utf-8", java_utf8.ERRORS), pos + size  # Java's decoding: U+FFFD
        return bytes(raw), pos + size

    def length(self, f: Field, pos: int, end: int, classic: str) -> tuple[int, int]:
        """A string's, bytes' or array's length; -1 for null (refused where the field is not nullable)."""
        if self.flexible:
            n, pos = read_unsigned_varint(self.data, pos, end)
            n -= 1
        else:
            fixed = _FIXED[classic]
            if pos + fixed.size > end:
                raise _underflow(f, end - pos)
            n, pos = fixed.unpack_from(self.data, pos)[0], pos + fixed.size
        if n < 0:
            if self.version not in f.nullable:
                raise MessageError(f"non-nullable field {f.name} was serialized as null")
            return -1, pos
        return n, pos


def _underflow(f: Field, left: int) -> MessageError:
    return MessageError("null", f"field {f.name} runs past the {left} bytes left")


def _short_array(size: int, left: int) -> str:
    return f"Error reading byte array of {size} byte(s): only {left} byte(s) available"


def parse(text: str) -> dict[str, Message]:
    """The messages of one schema module's text, by name (STRUCT blocks are folded into the fields)."""
    structs: dict[str, list[tuple[int, str]]] = {}
    blocks: list[list[tuple[int, str]]] = []
    for block in text.strip().split("\n\n"):
        lines = [(len(line) - len(line.lstrip(" ")), line.strip()) for line in block.splitlines() if line.strip()]
        if lines[0][1].startswith("STRUCT "):
            structs[lines[0][1].split()[1]] = lines[1:]
        else:
            blocks.append(lines)
    messages = {}
    for lines in blocks:
        words = lines[0][1].split()
        if words[0] != "MESSAGE":
            raise SchemaError(f"a block starts with {lines[0][1]!r}")
        attrs = dict(w.split("=", 1) for w in words[2:])
        msg = Message(words[1], int(attrs["id"]) if "id" in attrs else None, Versions.parse(attrs["versions"]),
                      Versions.parse(attrs.get("flexible", "none")))
        msg.fields = _fields(lines[1:], structs)
        messages[msg.name] = msg
    return messages


def _fields(lines: list[tuple[int, str]], structs: dict[str, list[tuple[int, str]]]) -> list[Field]:
    out, i = [], 0
    while i < len(lines):
        indent, text = lines[i]
        j = i + 1
        while j < len(lines) and lines[j][0] > indent:
            j += 1
        out.append(_field(text, lines[i + 1:j], structs))
        i = j
    return out


def _field(text: str, nested: list[tuple[int, str]], structs: dict[str, list[tuple[int, str]]]) -> Field:
    name, kind, versions, *rest = text.split()
    attrs = dict(w.split("=", 1) for w in rest)
    tagged, nullable = Versions.parse(attrs.get("tagged", "none")), Versions.parse(attrs.get("nullable", "none"))
    f = Field(name[:1].lower() + name[1:], kind, Versions.parse(versions), nullable,
              int(attrs["tag"]) if "tag" in attrs else None, tagged, None)
    element = kind[2:] if kind.startswith("[]") else None
    if element is not None:
        f.kind = "array"
        f.element = _field(f"{name} {element} 0+", nested, structs)  # its errors name the array
    elif kind not in _FIXED and kind not in ("string", "bytes", "uuid"):
        f.kind = "struct"
        f.fields = _fields(nested or structs.get(kind) or _missing(kind), structs)
    f.default = _default(f, attrs.get("default"))
    return f


def _missing(kind: str) -> NoReturn:
    raise SchemaError(f"type {kind} is neither a primitive nor a struct given")


def _default(f: Field, literal: str | None) -> object:
    if literal == "null":
        return None
    if f.kind == "array":
        return []
    if f.kind == "struct":
        return None  # a tagged struct is printed wherever it was written
    if f.kind == "bool":
        return literal == "true"
    if f.kind == "string":
        return literal or ""
    if f.kind == "bytes":
        return b""
    if f.kind == "uuid":
        return _ZERO_UUID
    if f.kind == "float64":
        return float(literal or 0)
    return int(literal or "0", 0)


def jsonable(obj: object) -> object:
    """The object with every bytes value as Jackson prints a binary node: standard base64, padded."""
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode("ascii")
    return obj


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPE_TABLE = {c: _ESCAPES.get(chr(c), f"\\u{c:04X}") for c in range(0x20)}
_ESCAPE_TABLE.update({ord(k): v for k, v in _ESCAPES.items()})


def jackson(obj: object) -> str:
    """`obj` as Jackson's `JsonNode.toString()` writes it (what kafka-dump-log prints): no spaces, characters
    beyond ASCII unescaped, control characters as \\n or \\u001F, doubles as Java's `Double.toString`."""
    if isinstance(obj, str):
        return '"' + obj.translate(_ESCAPE_TABLE) + '"'
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return java_double(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(jackson(k) + ":" + jackson(v) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(jackson(v) for v in obj) + "]"
    if isinstance(obj, bytes):
        return '"' + base64.b64encode(obj).decode("ascii") + '"'
    raise TypeError(f"no JSON for {type(obj).__name__}")


def java_double(x: float) -> str:
    """Java's `Double.toString`: plain from 10^-3 to 10^7, else computerized scientific notation (1.0E7)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        return repr(x)  # Python writes this range plainly, with the same shortest digits
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    assert isinstance(exp, int)  # a finite number's exponent: NaN and the infinities were answered above
    text = "".join(map(str, digits))
    exponent = len(text) - 1 + exp
    text = text.rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exponent}"
