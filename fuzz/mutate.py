"""Mutations of seed files, driven by a seeded `random.Random` so that (seed, index) reproduces an input.

Byte level (every kind): bit flips, bytes set to 0x00/0xFF/0x7F/0x80, truncation, insertion and deletion of
random bytes, a duplicated region, a splice with another file of the same kind, int32/int64 fields at
aligned positions overwritten with extreme values, zeros or garbage appended.

Text level (checkpoints, leader-epoch-checkpoint, partition.metadata, meta.properties): lines inserted,
dropped, duplicated and swapped, numbers replaced (extremes, signs, non-ASCII digits), unicode and odd line
breaks or whitespace inserted.

Structure level (`.log`): a batch header field set to an extreme value, the records inside one batch
mutated and the batch re-framed (for compressed batches: decompressed, mutated, recompressed with the same
codec), a compressed batch replaced by a decompression bomb, and, after any of these, every batch's CRC
recomputed (`fixcrc`), so that mutated content gets past the checksum into the record parsers. Producer
snapshots get their CRC recomputed the same way.

Each mutation returns a short description; the list of descriptions is part of the reproducer.
"""
from __future__ import annotations

import gzip
import random
import struct
import zlib
from functools import lru_cache

EXTREME_INT32 = (0, -1, 1, 2**31 - 1, -(2**31), 2**31 - 2, 0x7F7F7F7F, 14, 61)
EXTREME_INT64 = (0, -1, 1, 2**63 - 1, -(2**63), 2**31 - 1, -(2**31), 2**32, 2**62)
MAGIC_BYTES = (0x00, 0xFF, 0x7F, 0x80)

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# --- checksums ---------------------------------------------------------------------------------------------

def _crc32c_impl():
    try:
        import crc32c

        return crc32c.crc32c
    except ImportError:
        pass
    try:
        import google_crc32c

        return lambda b: google_crc32c.value(bytes(b))
    except ImportError:
        pass
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)

    def slow(b) -> int:
        c = 0xFFFFFFFF
        for x in bytes(b):
            c = table[(c ^ x) & 0xFF] ^ (c >> 8)
        return c ^ 0xFFFFFFFF

    return slow


crc32c = _crc32c_impl()


def crc32(b) -> int:
    return zlib.crc32(bytes(b)) & 0xFFFFFFFF


# --- batch framing (a reader of our own, independent of logtool) ------------------------------------------

def batches(data) -> list[tuple[int, int, int]]:
    """(position, size, magic) of each whole entry from the start, up to the first that does not frame."""
    out, pos, n = [], 0, len(data)
    while pos + 17 <= n:
        length = _I32.unpack_from(data, pos + 8)[0]
        if length < 14 or pos + 12 + length > n:
            break
        magic = data[pos + 16]
        if magic > 2:
            break
        out.append((pos, 12 + length, magic))
        pos += 12 + length
    return out


def fix_crcs(data: bytearray) -> int:
    """Recompute the CRC of every whole entry (CRC32C for v2, CRC32 for v0/v1); returns how many."""
    count = 0
    for pos, size, magic in batches(data):
        end = pos + size
        if magic == 2 and size >= 61:
            struct.pack_into(">I", data, pos + 17, crc32c(memoryview(data)[pos + 21 : end]))
        elif magic < 2:
            struct.pack_into(">I", data, pos + 12, crc32(memoryview(data)[pos + 16 : end]))
        else:
            continue
        count += 1
    return count


def fix_snapshot_crc(data: bytearray) -> None:
    if len(data) >= 10:
        struct.pack_into(">I", data, 2, crc32c(memoryview(data)[6:]))


# --- codecs ------------------------------------------------------------------------------------------------

_XERIAL = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def decompress(codec: int, payload: bytes) -> bytes | None:
    try:
        if codec == 1:
            return gzip.decompress(payload)
        if codec == 2:
            import snappy

            if payload[:8] == _XERIAL[:8]:
                out, pos = bytearray(), 16
                while pos + 4 <= len(payload):
                    n = _I32.unpack_from(payload, pos)[0]
                    out += snappy.decompress(payload[pos + 4 : pos + 4 + n])
                    pos += 4 + n
                return bytes(out)
            return snappy.decompress(payload)
        if codec == 3:
            import lz4.frame

            return lz4.frame.decompress(payload)
        if codec == 4:
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj().decompress(payload)
    except Exception:
        return None
    return None


def compress(codec: int, raw: bytes) -> bytes:
    if codec == 1:
        return gzip.compress(raw)
    if codec == 2:
        import snappy

        out = bytearray(_XERIAL)
        for i in range(0, max(len(raw), 1), 32768):
            block = snappy.compress(raw[i : i + 32768])
            out += _I32.pack(len(block)) + block
        return bytes(out)
    if codec == 3:
        import lz4.frame

        return lz4.frame.compress(raw, block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    if codec == 4:
        import zstandard

        return zstandard.ZstdCompressor().compress(raw)
    return raw


@lru_cache(maxsize=32)
def bomb(codec: int, size: int, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
    """A payload of `codec` that decompresses to `prefix`, `size` zero bytes and `suffix`, built chunk by
    chunk (never `size` bytes in memory at once)."""
    chunk = bytes(1 << 16)
    whole, rest = divmod(size, len(chunk))
    pieces = [prefix] if prefix else []
    pieces += [chunk] * whole + ([bytes(rest)] if rest else []) + ([suffix] if suffix else [])
    if codec == 1:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join([c.compress(p) for p in pieces] + [c.flush()])
    if codec == 2:
        import snappy

        cache: dict[int, bytes] = {}
        out = [_XERIAL]
        for p in pieces:
            block = cache.get(id(p)) if p is chunk else None
            if block is None:
                block = _I32.pack(len(snappy.compress(p))) + snappy.compress(p)
                if p is chunk:
                    cache[id(p)] = block
            out.append(block)
        return b"".join(out)
    if codec == 3:
        import lz4.frame

        c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
        return b"".join([c.begin()] + [c.compress(p) for p in pieces] + [c.flush()])
    if codec == 4:
        import zstandard

        c = zstandard.ZstdCompressor(level=3).compressobj()
        return b"".join([c.compress(p) for p in pieces] + [c.flush()])
    raise ValueError(codec)


def varint(v: int) -> bytes:
    """Kafka's zig-zag varint of a signed value."""
    u = (v << 1) ^ (v >> 63)
    u &= (1 << 64) - 1
    out = bytearray()
    while True:
        if u < 0x80:
            out.append(u)
            return bytes(out)
        out.append((u & 0x7F) | 0x80)
        u >>= 7


# --- byte-level mutations ----------------------------------------------------------------------------------

def _pos(rng: random.Random, n: int) -> int:
    return rng.randrange(n) if n > 0 else 0


def m_bitflip(d: bytearray, rng, _ctx) -> str:
    if not d:
        return m_insert(d, rng, _ctx)
    k = rng.choice((1, 1, 1, 2, 4, 8, 32))
    at = []
    for _ in range(k):
        p = _pos(rng, len(d))
        d[p] ^= 1 << rng.randrange(8)
        at.append(p)
    return f"bitflip x{k} at {at[:4]}"


def m_setbyte(d: bytearray, rng, _ctx) -> str:
    if not d:
        return m_insert(d, rng, _ctx)
    v = rng.choice(MAGIC_BYTES)
    p = _pos(rng, len(d))
    n = rng.choice((1, 1, 2, 4, 8, 16))
    d[p : p + n] = bytes([v]) * len(d[p : p + n])
    return f"set {n} byte(s) at {p} to {v:#04x}"


def m_truncate(d: bytearray, rng, _ctx) -> str:
    p = _pos(rng, len(d) + 1)
    del d[p:]
    return f"truncate at {p}"


def m_insert(d: bytearray, rng, _ctx) -> str:
    p = _pos(rng, len(d) + 1)
    n = rng.choice((1, 2, 4, 8, 13, 64, 512, 4096))
    d[p:p] = rng.randbytes(n)
    return f"insert {n} random bytes at {p}"


def m_delete(d: bytearray, rng, _ctx) -> str:
    if not d:
        return m_insert(d, rng, _ctx)
    p = _pos(rng, len(d))
    n = rng.choice((1, 2, 4, 8, 12, 61, 512, 4096))
    if rng.random() < 0.8:
        n = min(n, max(1, len(d) // 4))  # mostly keep most of a small file
    del d[p : p + n]
    return f"delete {n} bytes at {p}"


def m_duplicate(d: bytearray, rng, _ctx) -> str:
    if not d:
        return m_insert(d, rng, _ctx)
    a = _pos(rng, len(d))
    b = min(len(d), a + rng.choice((4, 8, 64, 1024, 16384, len(d))))
    c = _pos(rng, len(d) + 1)
    d[c:c] = d[a:b]
    return f"duplicate [{a}:{b}) at {c}"


def m_splice(d: bytearray, rng, ctx) -> str:
    others = ctx.get("others") or []
    if not others:
        return m_duplicate(d, rng, ctx)
    label, other = rng.choice(others)
    a = _pos(rng, len(d) + 1)
    b = _pos(rng, len(other) + 1)
    d[a:] = other[b:]
    return f"splice [:{a}) + {label}[{b}:)"


def m_int(d: bytearray, rng, _ctx) -> str:
    wide = rng.random() < 0.4
    size, values, fmt = (8, EXTREME_INT64, ">q") if wide else (4, EXTREME_INT32, ">i")
    if len(d) < size:
        return m_insert(d, rng, _ctx)
    align = rng.choice((4, 8)) if not wide else 8
    slots = (len(d) - size) // align + 1
    p = _pos(rng, slots) * align
    v = rng.choice(values)
    struct.pack_into(fmt, d, p, v)
    return f"int{size * 8} at {p} = {v}"


def m_append(d: bytearray, rng, _ctx) -> str:
    n = rng.choice((1, 7, 17, 61, 4096, 65536))
    if rng.random() < 0.5:
        d += bytes(n)
        return f"append {n} zeros"
    d += rng.randbytes(n)
    return f"append {n} garbage bytes"


BYTE_MUTATIONS = (m_bitflip, m_setbyte, m_truncate, m_insert, m_delete, m_duplicate, m_splice, m_int, m_append)


# --- .log structure mutations --------------------------------------------------------------------------------

# v2 header fields: (name, offset in the batch, struct format)
V2_FIELDS = (("baseOffset", 0, ">q"), ("length", 8, ">i"), ("partitionLeaderEpoch", 12, ">i"), ("magic", 16, ">b"),
             ("crc", 17, ">I"), ("attributes", 21, ">h"), ("lastOffsetDelta", 23, ">i"), ("baseTimestamp", 27, ">q"),
             ("maxTimestamp", 35, ">q"), ("producerId", 43, ">q"), ("producerEpoch", 51, ">h"),
             ("baseSequence", 53, ">i"), ("recordsCount", 57, ">i"))
LEGACY_FIELDS = (("offset", 0, ">q"), ("length", 8, ">i"), ("crc", 12, ">I"), ("magic", 16, ">b"),
                 ("attributes", 17, ">b"), ("timestamp", 18, ">q"))
_LIMITS = {">q": (-(2**63), 2**63 - 1), ">i": (-(2**31), 2**31 - 1), ">h": (-(2**15), 2**15 - 1), ">b": (-128, 127),
           ">I": (0, 2**32 - 1)}


def _field_value(rng, fmt: str, old: int) -> int:
    lo, hi = _LIMITS[fmt]
    choices = [0, -1, 1, lo, hi, old + 1, old - 1, old ^ 0x20, old ^ 0x07, rng.randint(lo, hi)]
    return max(lo, min(hi, rng.choice(choices)))


def m_header_field(d: bytearray, rng, ctx) -> str:
    bs = batches(d)
    if not bs:
        return m_int(d, rng, ctx)
    pos, size, magic = rng.choice(bs)
    fields = [f for f in (V2_FIELDS if magic == 2 else LEGACY_FIELDS) if f[1] + struct.calcsize(f[2]) <= size]
    name, off, fmt = rng.choice(fields)
    old = struct.unpack_from(fmt, d, pos + off)[0]
    if name == "attributes" and rng.random() < 0.5:
        v = old ^ rng.choice((0x01, 0x02, 0x04, 0x07, 0x08, 0x10, 0x20, 0x40, 0x30, 0x05, 0x06))
        v = max(_LIMITS[fmt][0], min(_LIMITS[fmt][1], v))
    else:
        v = _field_value(rng, fmt, old)
    struct.pack_into(fmt, d, pos + off, v)
    return f"batch@{pos} {name} {old} -> {v}"


def _v2_codec(d, pos) -> int:
    return struct.unpack_from(">h", d, pos + 21)[0] & 7


def _legacy_value_span(d, pos, size, magic) -> tuple[int, int] | None:
    """(start of the value-length field, end of the value) of a legacy message."""
    at = pos + 18 + (8 if magic == 1 else 0)
    end = pos + size
    if at + 4 > end:
        return None
    klen = _I32.unpack_from(d, at)[0]
    at += 4 + max(klen, 0)
    if at + 4 > end:
        return None
    vlen = _I32.unpack_from(d, at)[0]
    if vlen < 0 or at + 4 + vlen > end:
        return None
    return at, at + 4 + vlen


def _reframe(d: bytearray, pos: int, size: int, magic: int, body_start: int, new_body: bytes) -> None:
    """Replace the bytes [body_start, pos+size) of the entry at `pos` and fix its length field."""
    end = pos + size
    d[body_start:end] = new_body
    struct.pack_into(">i", d, pos + 8, body_start + len(new_body) - pos - 12)


def m_inner(d: bytearray, rng, ctx) -> str:
    """Mutate the records inside one batch (decompressed when compressed), re-frame it, recompute its CRC."""
    bs = [b for b in batches(d) if b[2] < 2 or b[1] >= 61]
    if not bs:
        return m_header_field(d, rng, ctx)
    pos, size, magic = rng.choice(bs)
    if magic == 2:
        codec, body_start = _v2_codec(d, pos), pos + 61
        payload = bytes(d[body_start : pos + size])
    else:
        codec = d[pos + 17] & 7
        span = _legacy_value_span(d, pos, size, magic)
        if span is None:
            return m_header_field(d, rng, ctx)
        body_start = span[0]
        payload = bytes(d[span[0] + 4 : span[1]])
    raw = payload if codec == 0 else decompress(codec, payload)
    if raw is None:
        return m_header_field(d, rng, ctx)
    inner = bytearray(raw)
    what = [m(inner, rng, {}) for m in rng.choices(
        (m_bitflip, m_setbyte, m_truncate, m_insert, m_delete, m_duplicate, m_int, m_varint),
        k=rng.choice((1, 1, 2, 3)))]
    new = bytes(inner) if codec == 0 else compress(codec, bytes(inner))
    if magic == 2:
        _reframe(d, pos, size, magic, body_start, new)
    else:
        _reframe(d, pos, size, magic, body_start, _I32.pack(len(new)) + new)
    fix_crcs(d)
    return f"inner of batch@{pos} (magic {magic}, codec {codec}): {'; '.join(what)}; fixcrc"


def m_varint(d: bytearray, rng, _ctx) -> str:
    """Overwrite bytes at a random position with an extreme zig-zag varint (records are varint-framed)."""
    raw = rng.choice((0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 0, 1, 2**63, 2**64 - 1, 0x80000000))
    enc = bytearray()
    while True:
        b = raw & 0x7F
        raw >>= 7
        if raw:
            enc.append(b | 0x80)
        else:
            enc.append(b)
            break
    if rng.random() < 0.2:
        enc = bytearray(b"\xff" * rng.choice((5, 10, 11)))  # over-long, never terminated
    p = _pos(rng, len(d) + 1)
    d[p : p + len(enc)] = enc
    return f"varint {bytes(enc).hex()} at {p}"


BOMB_SIZES = (1 << 20, 64 << 20, (128 << 20) - 1024, (128 << 20) + 1024, 200 << 20)


def m_bomb(d: bytearray, rng, ctx) -> str:
    """Replace one compressed batch's payload by a small one that inflates to many megabytes."""
    bs = [b for b in batches(d) if (b[2] == 2 and b[1] >= 61 and 1 <= _v2_codec(d, b[0]) <= 4)
          or (b[2] < 2 and 1 <= d[b[0] + 17] & 7 <= 4)]
    if not bs:
        return m_header_field(d, rng, ctx)
    pos, size, magic = rng.choice(bs)
    n = rng.choice(BOMB_SIZES)
    if magic == 2:
        codec = _v2_codec(d, pos)
        _reframe(d, pos, size, magic, pos + 61, bomb(codec, n))
    else:
        codec = d[pos + 17] & 7
        if codec == 4:
            codec = 1
            d[pos + 17] = (d[pos + 17] & ~7) | 1
        span = _legacy_value_span(d, pos, size, magic)
        if span is None or codec > 3:
            return m_header_field(d, rng, ctx)
        payload = bomb(codec, n)
        _reframe(d, pos, size, magic, span[0], _I32.pack(len(payload)) + payload)
    fix_crcs(d)
    return f"bomb in batch@{pos} (magic {magic}, codec {codec}): {n} zero bytes; fixcrc"


BIG_VALUES = (8 << 20, 48 << 20, 120 << 20)


def m_big_record(d: bytearray, rng, ctx) -> str:
    """Replace one v2 batch by a well-formed compressed batch of one record whose value is many megabytes of
    zeros: a few hundred kilobytes on disk, as a producer may send, that every reader must decode."""
    bs = [b for b in batches(d) if b[2] == 2 and b[1] >= 61]
    if not bs:
        return m_bomb(d, rng, ctx)
    pos, size, _magic = rng.choice(bs)
    codec = _v2_codec(d, pos)
    if not 1 <= codec <= 4:
        codec = rng.choice((1, 2, 3, 4))
    n = rng.choice(BIG_VALUES)
    head = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(n)  # attributes, ts delta, offset delta, null key
    body_len = len(head) + n + 1
    payload = bomb(codec, n, varint(body_len) + head, varint(0))  # headers: none
    attributes = (struct.unpack_from(">h", d, pos + 21)[0] & ~0x27) | codec  # not control: a data batch
    struct.pack_into(">h", d, pos + 21, attributes)
    struct.pack_into(">i", d, pos + 23, 0)  # lastOffsetDelta
    struct.pack_into(">i", d, pos + 57, 1)  # recordsCount
    _reframe(d, pos, size, 2, pos + 61, payload)
    fix_crcs(d)
    return f"batch@{pos}: one record with a {n}-byte value, codec {codec}; fixcrc"


LOG_MUTATIONS = (m_header_field, m_header_field, m_inner, m_inner, m_inner, m_varint)


# --- text mutations ------------------------------------------------------------------------------------------

NUMBERS = ("0", "-1", "+1", "-0", "2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
           "9223372036854775808", "-9223372036854775808", "99999999999999999999999999999", "1e5", "0x10", "01",
           "\u0663", "\uff11\uff12", "\u0967", "1_000", " 1", "", "NaN", "18446744073709551615")
ODD = ("\u0000", "\ufeff", "\u00a0", "\u2028", "\u2029", "\u0085", "\x1c", "\x1d", "\x1e", "\x0b", "\x0c", "\r", "\r\n",
       "\t", "\u00e9", "\U0001f600", "\ud800", "\udfff", "=", ":", "#", "!", "\\", "\\u00zz", "\\\n", " ", "\u3000")


def _lines(d: bytearray) -> list[bytes]:
    return bytes(d).split(b"\n")


def t_number(d: bytearray, rng, _ctx) -> str:
    import re

    text = bytes(d)
    spans = [m.span() for m in re.finditer(rb"-?\d+", text)]
    new = rng.choice(NUMBERS).encode("utf-8", "surrogatepass")
    if not spans:
        p = _pos(rng, len(d) + 1)
        d[p:p] = new
        return f"insert number {new!r} at {p}"
    a, b = rng.choice(spans)
    d[a:b] = new
    return f"number at {a} -> {new!r}"


def t_line(d: bytearray, rng, _ctx) -> str:
    lines = _lines(d)
    op = rng.choice(("insert", "drop", "dup", "swap", "garbage"))
    i = _pos(rng, len(lines))
    if op == "insert":
        new = rng.choice((b"", b" ", b"0", b"x 0 0", b"topic 0 0", b"topic-x 2147483647 9223372036854775807",
                          b"1 2 3 4",
                          b"version: 0", b"topic_id: AAAAAAAAAAAAAAAAAAAAAA", b"node.id=1", b"version=1",
                          b"directory.id=AAAAAAAAAAAAAAAAAAAAAQ", b"cluster.id=", b"\t0\t0", b"0 -1"))
        lines.insert(i, new)
    elif op == "drop" and lines:
        del lines[i]
    elif op == "dup" and lines:
        lines.insert(i, lines[i])
    elif op == "swap" and len(lines) > 1:
        j = _pos(rng, len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(i, rng.randbytes(rng.choice((1, 8, 40))))
    d[:] = b"\n".join(lines)
    return f"line {op} at {i}"


def t_unicode(d: bytearray, rng, _ctx) -> str:
    s = rng.choice(ODD)
    if rng.random() < 0.3:
        s = chr(rng.randrange(0x80, 0x110000))
    enc = s.encode("utf-8", "surrogatepass")
    p = _pos(rng, len(d) + 1)
    d[p:p] = enc
    return f"insert {s!r} at {p}"


def t_whitespace(d: bytearray, rng, _ctx) -> str:
    op = rng.choice(("crlf", "cr", "tabs", "trailing", "leading", "many-lines"))
    if op == "crlf":
        d[:] = bytes(d).replace(b"\n", b"\r\n")
    elif op == "cr":
        d[:] = bytes(d).replace(b"\n", b"\r")
    elif op == "tabs":
        d[:] = bytes(d).replace(b" ", b"\t")
    elif op == "trailing":
        d[:] = bytes(d).replace(b"\n", b"  \n")
    elif op == "leading":
        d[:] = b" " + bytes(d).replace(b"\n", b"\n ")
    else:
        lines = _lines(d)
        k = rng.choice((100, 10000, 100000))
        d[:] = b"\n".join(lines[:2] + [lines[-2] if len(lines) > 2 else b"t 0 0"] * k + lines[2:])
        return f"{op} x{k}"
    return op


TEXT_MUTATIONS = (t_number, t_number, t_line, t_line, t_unicode, t_whitespace)


# --- entry point ---------------------------------------------------------------------------------------------

def mutate(data: bytes, kind: str, rng: random.Random, others: list[tuple[str, bytes]]) -> tuple[bytes, list[str]]:
    """A mutated copy of `data` (a file of `kind`) and the description of each step."""
    d = bytearray(data)
    ctx = {"others": others}
    steps = []
    n = rng.choice((1, 1, 1, 2, 2, 3, 4, 6))
    is_log = kind.startswith("log.")
    is_text = kind in ("leader-epoch-checkpoint", "partition.metadata", "meta.properties",
                       "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                       "log-start-offset-checkpoint", "cleaner-offset-checkpoint")

    def apply(m) -> None:
        steps.append(f"{m.__name__[2:].replace('_', '-')}: {m(d, rng, ctx)}")

    # A decompression bomb or a huge record is built last (mostly alone), so that the other steps do not
    # tear it down before a reader meets it.
    heavy = rng.choice((m_bomb, m_bomb, m_big_record)) if is_log and rng.random() < 0.06 else None
    if heavy is not None:
        n = rng.choice((0, 0, 1, 2))
    for _ in range(n):
        r = rng.random()
        if is_text and r < 0.65:
            m = rng.choice(TEXT_MUTATIONS)
        elif is_log and r < 0.5:
            m = rng.choice(LOG_MUTATIONS)
        else:
            m = rng.choice(BYTE_MUTATIONS)
        apply(m)
    if heavy is not None:
        apply(heavy)
    if is_log and rng.random() < 0.5 and not steps[-1].endswith("fixcrc"):
        k = fix_crcs(d)
        steps.append(f"fixcrc ({k} batches)")
    if kind == "snapshot" and rng.random() < 0.6:
        fix_snapshot_crc(d)
        steps.append("fix snapshot crc")
    return bytes(d), steps
