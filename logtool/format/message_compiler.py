"""Kafka's generated `read()` as Python source: one reader per (message, version), compiled once from the schema.

The reference reading (`Message.read_reference`, `logtool.format.messages`): `_Reader` walks the schema's
fields for every message, asking of each field whether it is in the version, tagged, nullable. That is the
simple reading, and the one whose words are Kafka's when the bytes are bad; it costs some 7 us a metadata
record, against 1 us here. Here the same walk is done once per (message, version) to write straight-line code:
the fields in the version, in order; runs of fixed-size fields read by one `struct` call; arrays of integers by
one call; lengths and tag counts of one byte read inline; the output dict built as a literal, a tagged field
only where it is not its default. The reader returns exactly what the reference returns for every message it
reads whole; it reads only what the schema says, never past its bound (each struct checks it, as the
reference's `end`), and on any bad byte it stops (`Fallback`, or the IndexError or `struct.error` of a read
past the buffer) and `Message.read` asks the reference, which then says what is wrong in Kafka's words.
tests/format/test_message_reader.py holds the two to the same answers on every real record of the test data, on
random messages of every schema and version, and on damaged copies of both.
"""
from __future__ import annotations

import base64
import functools
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from logtool.format import java_utf8
from logtool.format.varint import VarintError, read_unsigned_varint

if TYPE_CHECKING:
    from logtool.format.messages import Field, Message

Reader = Callable[[Any, int, int], tuple[dict[str, object], int]]

_CODES = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
          "float64": "d"}
_SIZES = {k: struct.calcsize(">" + c) for k, c in _CODES.items()}
_ABSENT = object()  # a tagged field not in the bytes
_SHORT = 16  # arrays of integers shorter than this are read by a struct made for their length


class Fallback(Exception):
    """The bytes are not what the schema reads whole: the reference reader is asked instead."""


# What a read past the data raises, besides Fallback: the reference reader then says what is wrong.
FAILURES = (Fallback, IndexError, struct.error, VarintError)


@functools.lru_cache(maxsize=1 << 14)  # a log names the same topic and directory ids again and again
def _uuid(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")  # 16 bytes: 22 characters and "=="


def _int_array(code: str) -> Callable[[Any, int, int], list[Any]]:
    """The reader of a long array of integers (a struct.error past the data)."""

    def read(data: Any, pos: int, n: int) -> list[Any]:
        return list(struct.unpack_from(f">{n}{code}", data, pos))

    return read


def version_key(message: Message, version: int) -> int | None:
    """The version whose reader reads `version`: versions past every bound the schema names read alike (as
    Kafka's generated code reads a newer version as its highest), so that hostile version numbers compile no
    more readers than the schema has versions. None for a version no reader is made for (a negative one)."""
    if version < 0:
        return None
    return min(version, _top(message) + 1)


def _top(message: Message) -> int:
    bounds = [message.versions.low, message.versions.high, message.flexible.low, message.flexible.high]

    def walk(fields: list[Field]) -> None:
        for f in fields:
            bounds.extend((f.versions.low, f.versions.high, f.nullable.low, f.nullable.high, f.tagged.low,
                           f.tagged.high))
            if f.element is not None:
                walk([f.element])
            if f.fields:
                walk(f.fields)

    walk(message.fields)
    return max(b for b in bounds if b < 0x7FFF)


def compile_reader(message: Message, version: int) -> Reader:
    """The reader of `message` at `version` (a `version_key`): reader(data, pos, end) -> (fields, position
    after them), as `_Reader(data, version, flexible).struct(message.fields, pos, end)`."""
    gen = _Generator(version, version in message.flexible)
    top = gen.struct(message.fields)
    namespace: dict[str, Any] = {"Fallback": Fallback, "_ABSENT": _ABSENT, "_uvar": read_unsigned_varint,
                                 "_uuid": _uuid, "_ERR": java_utf8.ERRORS, **gen.names}
    exec(compile("\n".join(gen.lines), f"<{message.name} v{version} reader>", "exec"), namespace)
    reader: Reader = namespace[top]
    return reader


class _Generator:
    """Writes one function per struct (the message's own fields first): Python source lines."""

    def __init__(self, version: int, flexible: bool) -> None:
        self.v, self.flexible = version, flexible
        self.lines: list[str] = []
        self.names: dict[str, object] = {}  # constants the code names: structs, defaults
        self.count = 0

    def _name(self, prefix: str, value: object = None) -> str:
        self.count += 1
        name = f"{prefix}{self.count}"
        if value is not None or prefix == "_D":
            self.names[name] = value
        return name

    def struct(self, fields: list[Field]) -> str:
        """The function reading these fields as a struct: (data, pos, end) -> (dict, pos)."""
        v = self.v
        name = self._name("_s")
        body: list[str] = []
        inline = [f for f in fields if v in f.versions and not (f.tag is not None and v in f.tagged)]
        tags = {f.tag: f for f in fields if f.tag is not None and v in f.tagged and v in f.versions} \
            if self.flexible else {}  # read only in flexible versions (a dict: the last field of a tag wins)
        tagged = {id(f) for f in tags.values()}
        local = {id(f): self._name("x") for f in [*inline, *tags.values()]}
        run: list[Field] = []
        for f in inline:
            if f.kind in _CODES:
                run.append(f)
                continue
            self._fixed_run(body, run, local)
            run = []
            body += self.value(f, local[id(f)], "pos", "end")
        self._fixed_run(body, run, local)
        if self.flexible:  # then the tagged fields
            body += [f"{local[id(f)]} = _ABSENT" for f in tags.values()]
            body += self._uvarint("count", "pos", "end")
            body.append("for _ in range(count):")
            inner = self._uvarint("tag", "pos", "end") + self._uvarint("size", "pos", "end")
            inner.append("if size > end - pos: raise Fallback")
            for i, (tag, f) in enumerate(tags.items()):
                inner.append(f"{'elif' if i else 'if'} tag == {tag}:")
                inner += ["    " + line for line in ("tend = pos + size", "tpos = pos",
                                                       *self.value(f, local[id(f)], "tpos", "tend"),
                                                       "if tpos > tend: raise Fallback")]
            inner.append("pos += size")
            body += ["    " + line for line in inner]
        body.append("if pos > end: raise Fallback")
        # Kafka's order; a tagged field only where it was read and is not its default
        read = [f for f in fields if id(f) in local]
        if not tags:
            body.append("return {" + ", ".join(f"{f.name!r}: {local[id(f)]}" for f in read) + "}, pos")
        else:
            body.append("out = {}")
            for f in read:
                x = local[id(f)]
                if id(f) in tagged:
                    default = self._name("_D", f.default)
                    body.append(f"if {x} is not _ABSENT and {x} != {default}: out[{f.name!r}] = {x}")
                else:
                    body.append(f"out[{f.name!r}] = {x}")
            body.append("return out, pos")
        self.lines.append(f"def {name}(data, pos, end):")
        self.lines += ["    " + line for line in body]
        self.lines.append("")
        return name

    def _fixed_run(self, body: list[str], run: list[Field], local: dict[int, str]) -> None:
        """Consecutive fixed-size fields, one unpack for all."""
        if not run:
            return
        s = self._name("_st", struct.Struct(">" + "".join(_CODES[f.kind] for f in run)))
        targets = ", ".join(local[id(f)] for f in run) + ("," if len(run) == 1 else "")
        body.append(f"{targets} = {s}.unpack_from(data, pos)")
        body.append(f"pos += {self.names[s].size}")  # type: ignore[attr-defined]

    def _uvarint(self, target: str, pos: str, end: str, minus: int = 0) -> list[str]:
        """An unsigned varint into `target` (less `minus`): one byte inline, longer ones by the reference's
        function (its bounds and its 32-bit wrap)."""
        less, after = (f" - {minus}", f"; {target} -= {minus}") if minus else ("", "")
        return [f"b = data[{pos}]",
                f"if b < 0x80: {target} = b{less}; {pos} += 1",
                f"else: {target}, {pos} = _uvar(data, {pos}, {end}){after}"]

    def _length(self, f: Field, target: str, pos: str, end: str, classic: str) -> list[str]:
        """A string's, bytes' or array's length into `target`; -1 for null, where the field may be null."""
        if self.flexible:
            lines = self._uvarint(target, pos, end, 1)
        else:
            s = self._name("_st", struct.Struct(">" + _CODES[classic]))
            lines = [f"{target}, = {s}.unpack_from(data, {pos})",
                     f"{pos} += {_SIZES[classic]}"]
        if self.v not in f.nullable:
            lines.append(f"if {target} < 0: raise Fallback")
        return lines

    def value(self, f: Field, x: str, pos: str, end: str) -> list[str]:
        """Lines reading field `f` into `x`, from `pos` (advanced) within `end`."""
        kind = f.kind
        if kind in _CODES:
            s = self._name("_st", struct.Struct(">" + _CODES[kind]))
            return [f"{x}, = {s}.unpack_from(data, {pos})", f"{pos} += {_SIZES[kind]}"]
        if kind == "uuid":  # by the cache of their text, the function only for one not in it
            return [f"if {pos} + 16 > {end}: raise Fallback", f"raw = data[{pos}:{pos} + 16]",
                    f"{x} = _uuid(raw)", f"{pos} += 16"]
        if kind == "struct":
            fn = self.struct(f.fields or [])
            if self.v in f.nullable:  # a presence byte; a negative one is null
                return [f"if data[{pos}] >= 0x80: {x} = None; {pos} += 1",
                        f"else: {x}, {pos} = {fn}(data, {pos} + 1, {end})"]
            return [f"{x}, {pos} = {fn}(data, {pos}, {end})"]
        n = self._name("n")
        lines = self._length(f, n, pos, end, "int32" if kind in ("bytes", "array") else "int16")
        if kind == "array":
            read = self._array(f, x, n, pos, end)
        elif kind == "string":
            read = [f"if {n} > 0x7FFF or {n} > {end} - {pos}: raise Fallback",
                    f"{x} = data[{pos}:{pos} + {n}].decode('utf-8', _ERR)", f"{pos} += {n}"]
        else:  # bytes
            read = [f"if {n} > {end} - {pos}: raise Fallback", f"{x} = bytes(data[{pos}:{pos} + {n}])",
                    f"{pos} += {n}"]
        if self.v in f.nullable:
            return [*lines, f"if {n} < 0: {x} = None", "else:", *("    " + line for line in read)]
        return lines + read

    def _array(self, f: Field, x: str, n: str, pos: str, end: str) -> list[str]:
        element = f.element
        assert element is not None, f.name
        lines = [f"if {n} > {end} - {pos}: raise Fallback"]  # Kafka's check: each element takes a byte or more
        if element.kind in _CODES:  # one unpack for the whole array: a struct per length, made once
            code, size = _CODES[element.kind], _SIZES[element.kind]
            structs = self._name("_arr", tuple(struct.Struct(f">{i}{code}") for i in range(_SHORT)))
            ints = self._name("_ints", _int_array(code))
            return [*lines, f"{x} = list({structs}[{n}].unpack_from(data, {pos})) if {n} < {_SHORT} else "
                            f"{ints}(data, {pos}, {n})", f"{pos} += {n} * {size}"]
        item = self._name("e")
        return [*lines, f"{x} = []", f"for _ in range({n}):",
                *("    " + line for line in self.value(element, item, pos, end)), f"    {x}.append({item})"]
