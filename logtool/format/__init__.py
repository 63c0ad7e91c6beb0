"""Bytes -> typed views (see DESIGN.md). `Bytes` is what every reader here takes."""
from __future__ import annotations

import mmap
from typing import TypeAlias

# A segment's mapping, bytes read from a file, or a slice of either: each indexes to an int, slices to bytes
# or a memoryview, and is taken by struct.unpack_from, memoryview() and the CRCs without a copy.
Bytes: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
