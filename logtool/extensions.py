"""logtool's compiled modules (the kernel, the SIGBUS guard) where logtool is imported from a zip archive: the
package an audit ships to Spark's executors (spark/session.py's `ship`). Python imports Python modules from a
zip but never a compiled one, so without this every executor ran the pure-Python walk, unguarded. The archive
holds the driver's builds beside their packages; one is copied out once, beside the archive, and loaded from
the copy. PySpark runs the driver's minor version of Python on its executors, whose builds those are."""
from __future__ import annotations

import importlib.machinery
import os
import sys
import zipimport
from pathlib import Path
from typing import Any

# hashlib, importlib.util and tempfile are imported where a module is loaded from an archive: every command
# imports this module, and only an audit's executor needs them.


def instead(name: str, missing: ImportError) -> tuple[Any, str | None]:
    """Where the plain import of the compiled module `name` failed with `missing`: (the module loaded from the
    archive its package came from, None), or (None, why neither can be had, in words that follow the module's
    own name). Any: its type is its stub's, which the caller's import names."""
    try:
        module = _from_archive(name)
    except ImportError as e:
        return None, f"cannot be loaded from the archive ({e})"
    return (module, None) if module is not None else (None, f"is not installed ({missing})")


def _from_archive(name: str) -> Any:
    """The compiled module `name` (its package already imported), loaded from a copy of its build in the
    archive the package was imported from; None where the package is not imported from an archive. Raises
    ImportError where the archive holds no build of it for this Python, or no copy can be made."""
    package, _, leaf = name.rpartition(".")
    spec = sys.modules[package].__spec__
    loader = spec.loader if spec is not None else None
    if not isinstance(loader, zipimport.zipimporter) or spec is None or not spec.submodule_search_locations:
        return None
    import hashlib

    # Where its modules are in the archive (the loader's own prefix is its parent package's).
    inner = os.path.relpath(spec.submodule_search_locations[0], loader.archive).replace(os.sep, "/")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        try:
            data = loader.get_data(f"{inner}/{leaf}{suffix}")
        except OSError:
            continue
        file = f"{leaf}-{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
        try:
            copy = _copied(loader.archive, file, data)
        except OSError as e:  # a full or read-only disk: the pure path, saying why, not a failed import
            raise ImportError(f"cannot copy {name} out of {loader.archive}: {e.strerror or e}") from e
        return _load(name, copy)
    raise ImportError(f"{loader.archive} holds no build of {name} for this Python")


def _load(name: str, path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a compiled module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    package, _, leaf = name.rpartition(".")
    setattr(sys.modules[package], leaf, module)
    return module


def _copied(archive: str, file: str, data: bytes) -> Path:
    """`data` in a file named `file` in a directory of this user's beside the archive (in Spark's files
    directory, which lives as long as the archive does), else in a new temporary one. Workers that copy at
    once each write a file of their own and rename it into place: none loads a half-written copy."""
    import tempfile

    try:
        folder = Path(f"{archive}.compiled")
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
        if not folder.is_dir() or folder.is_symlink() or st.st_uid != os.geteuid():
            raise OSError(f"{folder} is not this user's directory")
    except OSError:
        folder = Path(tempfile.mkdtemp(prefix="logtool-compiled-"))
    path = folder / file
    if not path.is_file() or path.stat().st_size != len(data):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{file}.")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    return path
