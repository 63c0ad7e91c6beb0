"""Survive a file being truncated under a read-only mmap.

A Kafka follower truncating its log while logtool has the segment mapped makes any touch of a page
past the new end of file raise SIGBUS, which kills the process. `guard(mm)` registers the mapping with
the C extension `logtool.store._mapguard`: from then on such a touch reads zeros instead (the faulting
page is replaced by a read-only zero page) and `Guard.faulted_at()` tells the lowest offset that did.
A SIGBUS anywhere else still goes to the handler that was there before (faulthandler's, or the
default, which kills the process as before).

    buf, size = open_readonly(path)
    g = guard(buf)
    try:
        ... read buf ...
        if (cut := g.faulted_at()) is not None:
            ... the file was cut under us: nothing at or past `cut` was really read ...
    finally:
        g.close()      # before buf.close(): the address range may be reused by another mapping
        buf.close()

Contract:
- The Guard must stay open for as long as anything reads the buffer, and be closed before the buffer
  is unmapped. It keeps a reference to the buffer, so the mapping cannot be collected under it.
- Only user-space reads are repaired (slicing, struct.unpack_from, memoryview.tobytes, crc, codecs).
  Handing the mapped memory to a system call (os.write(fd, memoryview(mm))) makes the kernel fail that
  call with EFAULT instead; there is no signal to catch.
- A page, once repaired, reads zeros for the life of the mapping, even if the file grows back.
- Reads below the cut keep giving the file's bytes.

The extension is a required part of the install (pyproject.toml builds it; a failed compile fails the
install), so on Linux AVAILABLE is True and the tests assert it. AVAILABLE is False only where the
module cannot exist or was not built: Windows (no SIGBUS, the extension refuses to import) or running
from a checkout that was never installed. There `guard()` returns a Guard that guards nothing, so that
the tool still runs; a truncation under it then kills the process, as before this module existed.
`UNAVAILABLE_REASON` says why.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from logtool.extensions import instead

if TYPE_CHECKING:
    from typing_extensions import Buffer


class _Extension(Protocol):
    """What this module calls of the extension. `_mapguard.pyi` declares the C functions' signatures; mypy
    holds that module to this contract where it is imported as `_c`."""

    def register(self, buf: Buffer, /) -> int: ...
    def unregister(self, slot: int, /) -> None: ...
    def faulted(self, slot: int, /) -> int: ...
    def reset(self, slot: int, /) -> None: ...
    def handler_state(self) -> str: ...


class _NoTableFullError(RuntimeError):
    """Every slot is taken (never raised without the extension)."""


_c: _Extension | None
TableFullError: type[RuntimeError]


def _import() -> tuple[Any, str | None]:
    """(the extension, None), or (None, why it cannot be imported)."""
    try:
        from logtool.store import _mapguard
    except ImportError as e:  # see the module docstring: Windows, or a checkout that was never installed
        module, why = instead("logtool.store._mapguard", e)  # or an audit's executor (logtool/extensions.py)
        return module, None if why is None else f"the SIGBUS guard {why}"
    contract: _Extension = _mapguard  # mypy holds the module to what this module calls of it
    return contract, None


_mapguard, UNAVAILABLE_REASON = _import()
if _mapguard is None:
    _c = None
    AVAILABLE = False
    TableFullError = _NoTableFullError
    SLOTS = 0
else:
    _c = _mapguard
    AVAILABLE = True
    TableFullError = _mapguard.TableFullError
    SLOTS = _mapguard.SLOTS

__all__ = ["AVAILABLE", "UNAVAILABLE_REASON", "SLOTS", "Guard", "TableFullError", "guard", "handler_state"]


def _extension() -> _Extension:
    """The extension, for a Guard that holds a slot: only the extension's register() gives one."""
    assert _c is not None
    return _c


class Guard:
    """One registered mapping. `faulted_at()`: None, or the lowest offset (page-aligned) whose page
    faulted and now reads as zeros. A Guard made without the extension guards nothing and says None."""

    __slots__ = ("_slot", "_buf", "__weakref__")

    def __init__(self, buf: Buffer | None, slot: int | None) -> None:
        self._buf = buf
        self._slot = slot

    @property
    def active(self) -> bool:
        """True while this Guard protects its buffer."""
        return self._slot is not None

    def faulted_at(self) -> int | None:
        if self._slot is None:
            return None
        off = _extension().faulted(self._slot)
        return None if off < 0 else off

    def reset(self) -> None:
        """Forget the faults seen so far (the repaired pages keep reading zeros)."""
        if self._slot is not None:
            _extension().reset(self._slot)

    def close(self) -> None:
        """Stop guarding; idempotent. Call before unmapping the buffer."""
        slot, self._slot = self._slot, None
        self._buf = None
        if slot is not None:
            _extension().unregister(slot)

    def __enter__(self) -> "Guard":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A dropped Guard frees its slot, so leaked guards cannot fill the table. The buffer it held
        # is then collectable; it must not be read unguarded afterwards.
        if self._slot is not None and _c is not None:
            try:
                self.close()
            except Exception:
                pass

    def __repr__(self) -> str:
        state = "inactive" if self._slot is None else f"slot {self._slot}, faulted_at={self.faulted_at()}"
        return f"<Guard {state}>"


def guard(buf: Buffer, hold: bool = True) -> Guard:
    """Guard a read-only buffer (an mmap opened with ACCESS_READ; b"" and other bytes-like objects are
    accepted and simply never fault). Raises TableFullError when all SLOTS slots are in use (a mapping
    left registered: refusing beats reading it unguarded), ValueError for a writable buffer.
    `hold=False` is for a buffer that owns its Guard and closes it before it unmaps (mapping.GuardedMap):
    the Guard then keeps no reference back, so the two make no cycle."""
    if _c is None:
        return Guard(buf if hold else None, None)
    return Guard(buf if hold else None, _c.register(buf))


def handler_state() -> str:
    """'installed', 'not installed' (nothing guarded yet), 'overridden' (another SIGBUS handler was put
    on top of ours after first use), or 'unavailable' (no extension)."""
    return _c.handler_state() if _c is not None else "unavailable"
