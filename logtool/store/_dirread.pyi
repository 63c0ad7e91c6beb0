# The directory reader's one function (_dirread.c, its PyMethodDef table), as mypy is to see it: an extension
# module has no annotations of its own.

def read_dirs(paths: list[bytes], below: int, budget: int, spare_cache: bool = False, /) \
        -> list[int | tuple[list[str], list[str], dict[str, tuple[bytes, int]]] | None]: ...
