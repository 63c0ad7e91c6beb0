"""The zip of the installed logtool package that an audit ships to its executors: each module's source and
compiled code, and the compiled extensions. Compiling it is most of the 0.2-0.7 s that making it takes (more
than the 16 ms of reading and hashing the package), and the zip is the same for every audit of one install:
a copy is kept in the user's cache directory (the class cache's, spark/class_cache.py) and copied from there."""
from __future__ import annotations

import hashlib
import marshal
import os
import shutil
import stat
import time
import zipfile
from collections.abc import Collection, Iterable
from importlib.machinery import EXTENSION_SUFFIXES
from importlib.util import MAGIC_NUMBER, source_hash
from pathlib import Path

from logtool.spark import class_cache

PACKAGE = Path(__file__).resolve().parents[1]  # the logtool package directory
PREFIX = "shipped-"
UNUSED_S = 7 * 86_400  # a cached zip no audit used for a week (an older install's) is removed


def package_archive(folder: Path, skip: Collection[str] = ()) -> Path | None:
    """The installed package as a zip in `folder`, named by its content (None: a zip of that name is in
    `skip`). Beside each module its compiled code, which Python takes from an archive as it is (unchecked),
    so that no executor compiles the package again; and the compiled extensions as built here, which
    logtool/extensions.py loads from the archive (Python imports none from a zip by itself)."""
    def read(paths: Iterable[Path]) -> dict[str, bytes]:  # by the name in the archive, each file read once
        return {str(p.relative_to(PACKAGE.parent)): p.read_bytes() for p in sorted(paths)
                if "__pycache__" not in p.parts}

    sources = read(PACKAGE.rglob("*.py"))
    builds = read(p for p in PACKAGE.rglob("*") if p.name.endswith(tuple(EXTENSION_SUFFIXES)))
    digest = hashlib.sha256(MAGIC_NUMBER)  # compiled code is this Python's: another's names another zip
    for inner, data in (sources | builds).items():
        digest.update(inner.encode() + b"\0" + data)
    name = f"logtool-{digest.hexdigest()[:16]}.zip"
    if name in skip:
        return None
    archive, cached = folder / name, _cached(name)
    if not _copied_from_cache(cached, archive):
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            for inner, source in sources.items():
                z.writestr(_entry(inner), source)
                z.writestr(_entry(inner[:-3] + ".pyc"), _unchecked_pyc(source, inner))
            for inner, data in builds.items():
                z.writestr(_entry(inner), data)
        _keep_in_cache(archive, cached)
    return archive


def _entry(name: str) -> zipfile.ZipInfo:
    """An entry of fixed time and mode: one package makes one zip, byte for byte, whenever it is made."""
    entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = 0o644 << 16
    return entry


def _unchecked_pyc(source: bytes, path: str) -> bytes:
    """A module's compiled code as a .pyc that Python takes without comparing it with its source (PEP 552's
    unchecked hash-based form): zipimport looks for `module.pyc` beside `module.py`."""
    code = compile(source, path, "exec", dont_inherit=True)
    flags = 0b01  # hash-based, not checked against the source
    return MAGIC_NUMBER + flags.to_bytes(4, "little") + source_hash(source) + marshal.dumps(code)


def _cached(name: str) -> Path | None:
    """Where the cache keeps the zip `name` (None: no cache)."""
    folder = class_cache.cache_folder()
    return None if folder is None else folder / f"{PREFIX}{name}"


def _copied_from_cache(cached: Path | None, archive: Path) -> bool:
    """`archive` copied from `cached`, if it is a file this user made and alone can change, and it opens as a
    zip (a copy cut short, whatever the cause, is made again)."""
    if cached is None or not class_cache.usable(cached):
        return False
    try:
        with zipfile.ZipFile(cached):
            pass
        shutil.copyfile(cached, archive, follow_symlinks=False)
        os.utime(cached)  # in use: not removed as unused
    except (OSError, zipfile.BadZipFile):
        archive.unlink(missing_ok=True)
        return False
    return True


def _keep_in_cache(archive: Path, cached: Path | None) -> None:
    """A copy of `archive` as `cached` (written beside its name, renamed over it, read-only), and cached zips
    unused for a week removed. Best effort: a full or read-only cache only means the next audit compiles."""
    if cached is None:
        return
    part = cached.with_name(f"{cached.name}.{os.getpid()}.part")
    try:
        shutil.copyfile(archive, part)
        part.chmod(stat.S_IRUSR)
        os.replace(part, cached)
    except OSError:
        part.unlink(missing_ok=True)
        return
    now = time.time()
    for other in cached.parent.glob(f"{PREFIX}*"):
        try:
            if other != cached and now - other.stat().st_mtime > UNUSED_S:
                other.unlink()
        except OSError:
            pass
