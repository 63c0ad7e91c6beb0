"""House rules: the guard tests that keep the project's shape.

1. Import direction, read from the source with `ast` (imports inside functions included): the catalog and the
   exit codes are leaves, the top-level units of logtool form no cycle, every module imports only its own
   package and lower layers, and only logtool/recovery/ opens files for writing.
2. The finding catalog is consistent with itself, with the command line, and with every place that names a
   kind; the Sink caps per kind and file.
3. Every --help teaches (the docs, README.md and the man pages: tests/house/test_docs.py).
4. BatchView.last_sequence at base offset 0, as a view and through `logtool dump`.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from conftest import ROOT, run_logtool
from kafka.record.default_records import DefaultRecordBatchBuilder

from logtool import findings
from logtool.cli import cli
from logtool.findings import BY_NAME, KINDS, Fix, Group, Kind, Sink
from logtool.format.batch import BatchView, read_entry
from tools import cliref

PACKAGE = ROOT / "logtool"


# ---------------------------------------------------------------------------------------------------------
# Reading the package's source


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, tuple[Path, ast.Module]]:
    """Every module under logtool/, by dotted name, with its parsed source."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        out[_module_name(path)] = (path, ast.parse(path.read_text(), filename=str(path)))
    return out


SOURCES = _sources()


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _imports(module: str, path: Path, tree: ast.Module) -> Iterator[tuple[str, int]]:
    """(imported logtool module, line) for every import of logtool in the module, at any depth.

    `from logtool.x import y` names logtool.x.y when that is a module, else logtool.x; relative imports are
    resolved against the module's package."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "logtool" or alias.name.startswith("logtool."):
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source != "logtool" and not source.startswith("logtool."):
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield (sub if sub in SOURCES else source), node.lineno


IMPORTS: list[tuple[str, str, int, str]] = [  # (importer, imported, line, importer's file)
    (module, target, line, _rel(path))
    for module, (path, tree) in SOURCES.items()
    for target, line in _imports(module, path, tree)
]


def _unit(module: str) -> str:
    """The top-level unit of logtool a module belongs to: a subpackage, a top-level module, or the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "logtool"


# The layers, lowest first. A module may import its own unit and units of a lower rank. The root package
# (logtool/__init__.py, which only holds __version__) is a leaf like the catalog. spark may import anything
# below commands, and commands (audit) imports spark: it sits between render and commands.
LAYERS: list[tuple[str, ...]] = [
    ("logtool", "findings", "exitcodes", "collector", "extensions"),
    ("format",),
    ("store",),
    ("rules",),
    ("checks",),
    ("reads",),
    ("recovery",),
    ("render",),
    ("spark",),
    ("commands",),
    ("cli",),
    ("__main__", "spark_job"),
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _where(importer_file: str, line: int, target: str) -> str:
    return f"{importer_file}:{line} imports {target}"


# ---------------------------------------------------------------------------------------------------------
# 1. Import direction


def test_the_source_is_read():
    # The guards below are only as good as what they read: every layer is there, with its imports.
    assert set(RANK) >= {_unit(m) for m in SOURCES}, "a top-level unit of logtool is in no layer"
    assert {_unit(m) for m in SOURCES} == set(RANK), "a layer names a unit that does not exist"
    assert len(IMPORTS) > 150
    # An import inside a function is seen (commands/audit.py imports the Spark driver lazily).
    assert any(m == "logtool.commands.audit" and t == "logtool.spark.driver" for m, t, _, _ in IMPORTS)


@pytest.mark.parametrize("leaf", ["logtool.findings", "logtool.exitcodes"])
def test_leaves_import_nothing_of_logtool(leaf):
    found = [_where(f, line, t) for m, t, line, f in IMPORTS if m == leaf]
    assert not found, f"{leaf} must import nothing of logtool:\n" + "\n".join(found)


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a path whose last node is its first, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_no_cycle_between_packages():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    # Nodes: the subpackages (format, store, rules, checks, reads, recovery, render, commands, spark) and the
    # top-level modules (cli, findings, exitcodes, __main__, the root): a cycle through cli.py is still one.
    graph: dict[str, set[str]] = {}
    why: dict[tuple[str, str], str] = {}
    for module, target, line, file in IMPORTS:
        a, b = _unit(module), _unit(target)
        graph.setdefault(a, set())
        if a != b:
            graph[a].add(b)
            why.setdefault((a, b), _where(file, line, target))
    cycle = _find_cycle(graph)
    assert cycle is None, "package cycle " + " -> ".join(cycle) + ":\n" + "\n".join(
        why[(a, b)] for a, b in zip(cycle, cycle[1:]))


def test_no_test_module_imports_another():
    """What tests share lives in tests/support: a test module is found by pytest where its group is, and
    importing one from another works only when pytest happened to collect it first."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names
                    if n.split(".")[-1].startswith("test_")]
    assert not bad, "\n".join(bad)


def test_layers():
    bad = [f"{_where(f, line, t)} ({_unit(m)} may not import {_unit(t)}, a higher layer)"
           for m, t, line, f in IMPORTS if RANK[_unit(t)] > RANK[_unit(m)]]
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_who_imports_commands_render_recovery():
    bad = []
    for m, t, line, f in IMPORTS:
        src, dst = _unit(m), _unit(t)
        if dst == "commands" and src not in ("commands", "cli", "spark"):
            bad.append(_where(f, line, t) + " (only commands, cli.py and spark may import logtool.commands)")
        if dst == "render" and RANK[src] < RANK["render"]:
            bad.append(_where(f, line, t) + f" ({src} is below render)")
        if dst == "recovery" and RANK[src] < RANK["recovery"]:
            bad.append(_where(f, line, t) + f" ({src} is below recovery)")
    assert not bad, "\n".join(bad)


# Modules outside logtool/recovery/ that may write files, each outside any log dir. Each entry must still be
# needed (test_write_allow_list_is_needed). Not listed because the scan does not see them as file writes:
# render writes to the streams it is given (stdout); spark/driver.py writes the audit's --output through
# Hadoop's FileSystem API and DataFrame writers (JVM calls), and commands/audit.py refuses an --output
# inside a PATH; bench/ and fixtures/ are outside logtool/.
WRITE_ALLOWED = {
    "logtool/cli.py": "opens /dev/null O_WRONLY to park stdout once its reader went away (`logtool dump | head`)",
    "logtool/commands/report.py": "writes the HTML page of an audit where asked (a temporary file renamed over "
                                  "it), refusing a Kafka log dir or partition dir",
    "logtool/spark/session.py": "ship() makes a folder in Spark's own per-context files directory for the "
                                "package's zip (mkdir)",
    "logtool/spark/package.py": "writes the package's zip into that folder (ZipFile 'w', or a copy of the "
                                "cached one), and keeps a copy in the class cache's directory (written beside "
                                "its name, renamed over it; unused ones removed after a week)",
    "logtool/extensions.py": "on an audit's executor, copies a compiled module out of the archive ship() made "
                             "into a directory of its own beside that archive (or a new temporary one), to load it",
    "logtool/spark/driver.py": "with a local master, the audit's warm-up writes an empty Parquet table into a new "
                               "temporary directory of its own, removed at once (the tables go where --output says)",
    "logtool/spark/class_cache.py": "keeps the driver JVM's class archive in the user's cache directory (mode 700, "
                                    "never a Kafka log dir or partition dir): the JVM's class list, a lock, the "
                                    "archive written beside its name and renamed over it, stale ones removed",
    "logtool/spark/jvm_stderr.py": "passes the JVM's stderr lines on to fd 2 with os.write (a daemon thread must "
                                   "not hold sys.stderr's lock when the interpreter exits)",
}

_WRITE_MODE = re.compile(r"^[rwxabtU+]*[wax+][rwxabtU+]*$")
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}
_OS_WRITES = {"ftruncate", "truncate", "unlink", "remove", "rename", "renames", "replace", "mkdir", "makedirs",
              "rmdir", "removedirs", "link", "symlink", "write", "pwrite", "writev", "chmod", "chown", "fchmod",
              "fchown", "lchown", "utime", "mkfifo", "mknod"}
_SHUTIL_READS = {"which", "disk_usage", "get_terminal_size"}  # every other shutil function changes files
_PATH_WRITES = {"write_text", "write_bytes", "touch", "mkdir", "rmdir", "unlink", "rename", "symlink_to",
                "hardlink_to"}  # method names no read-only API here shares (not .replace: str has it)
_OPEN_LIKE = {"open", "io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "tarfile.open",
              "zipfile.ZipFile"}  # (file, mode, ...)


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, aliases)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def _arg(call: ast.Call, index: int, name: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _writes_mode(mode: ast.expr | None) -> bool:
    if mode is None:
        return False  # the default mode reads
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(_WRITE_MODE.match(mode.value))
    return True  # a mode computed at run time: it cannot be shown to read only


def file_writes(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for every call in the tree that opens a file for writing or changes the file system."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("ACCESS_WRITE", "PROT_WRITE"):
            found.append((node.lineno, f"writable mapping ({node.attr})"))
        if not isinstance(node, ast.Call):
            continue
        name = _qualified(node.func, aliases)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if name == "os.open":
            flags = _arg(node, 1, "flags")
            used = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(flags)
                    if isinstance(n, (ast.Attribute, ast.Name))} if flags is not None else set()
            if used & _WRITE_FLAGS:
                found.append((node.lineno, f"os.open with {', '.join(sorted(used & _WRITE_FLAGS))}"))
        elif name in _OPEN_LIKE:
            if _writes_mode(_arg(node, 1, "mode")):
                found.append((node.lineno, f"{name}(..., mode for writing)"))
        elif name is not None and name.startswith("os.") and name[3:] in _OS_WRITES:
            found.append((node.lineno, name))
        elif name is not None and name.startswith("shutil.") and name[7:] not in _SHUTIL_READS:
            found.append((node.lineno, name))
        elif name is not None and name.startswith("tempfile."):
            found.append((node.lineno, name))
        elif method in _PATH_WRITES:
            found.append((node.lineno, f".{method}()"))
        elif method == "open":  # Path.open(mode), or any opener taking a mode string
            modes = [a for a in [*node.args, *(k.value for k in node.keywords if k.arg == "mode")]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str) and _WRITE_MODE.match(a.value)]
            if modes:
                found.append((node.lineno, f".open({modes[0].value!r})"))
    return sorted(found)


def test_write_scan_sees_writes():
    # The scan itself: each way of writing is seen, and the reading look-alikes are not.
    writes = file_writes(ast.parse(
        "import os, shutil, zipfile\nfrom pathlib import Path\nfrom os import ftruncate as ft\n"
        "open(p, 'w')\nopen(p, mode='ab')\nopen(p, 'r+b')\nopen(p, m)\nos.open(p, os.O_WRONLY | os.O_CREAT)\n"
        "os.open(p, os.O_RDWR)\nPath(p).write_text('x')\np.write_bytes(b'')\nos.ftruncate(fd, 0)\n"
        "os.truncate(p, 0)\nos.unlink(p)\nos.remove(p)\nos.rename(a, b)\nos.replace(a, b)\nshutil.copy(a, b)\n"
        "shutil.rmtree(d)\nzipfile.ZipFile(p, 'w')\np.open('w')\nft(fd, 0)\n"))
    assert [line for line, _ in writes] == list(range(4, 23))
    assert file_writes(ast.parse(
        "import os, shutil\nopen(p)\nopen(p, 'rb')\nos.open(p, os.O_RDONLY | os.O_DIRECTORY)\n"
        "s.replace('a', 'b')\npacer.open(path, size)\nshutil.which('java')\nout.write(text)\n")) == []
    # And in the code: the repair writer is found writing.
    path, tree = SOURCES["logtool.recovery.writer"]
    assert len(file_writes(tree)) >= 5


def test_only_recovery_writes_files():
    bad = []
    for module, (path, tree) in SOURCES.items():
        rel = _rel(path)
        if module.startswith("logtool.recovery") or rel in WRITE_ALLOWED:
            continue
        bad += [f"{rel}:{line}: {what}" for line, what in file_writes(tree)]
    assert not bad, "only logtool/recovery/ writes files:\n" + "\n".join(bad)


def test_write_allow_list_is_needed():
    files = {_rel(path): tree for path, tree in SOURCES.values()}
    stale = [rel for rel in WRITE_ALLOWED if rel not in files or not file_writes(files[rel])]
    assert not stale, f"allowed to write but writes nothing (drop from WRITE_ALLOWED): {stale}"


# ---------------------------------------------------------------------------------------------------------
# 2. The catalog

_UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
_GROUP_OF_DIGIT = {"1": Group.FRAMING, "2": Group.RECORDS, "3": Group.INDEX, "4": Group.PARTITION,
                   "5": Group.LOG_DIR, "6": Group.PRODUCERS, "7": Group.METADATA}


def test_codes_and_names():
    codes = [k.code for k in KINDS]
    names = [k.name for k in KINDS]
    assert len(set(codes)) == len(codes), f"duplicate codes: {sorted({c for c in codes if codes.count(c) > 1})}"
    assert len(set(names)) == len(names), f"duplicate names: {sorted({n for n in names if names.count(n) > 1})}"
    assert [c for c in codes if not re.fullmatch(r"LT[1-7]\d\d", c)] == []
    assert [n for n in names if not _UPPER_SNAKE.match(n)] == []


def test_group_follows_code():
    assert [(k.code, k.group) for k in KINDS if k.group is not _GROUP_OF_DIGIT[k.code[2]]] == []


def test_cutting_kinds_are_framing_and_truncated():
    cuts = [k for k in KINDS if k.cuts]
    assert cuts
    assert [k.name for k in cuts if k.group is not Group.FRAMING] == []
    assert [k.name for k in cuts if k.fix is not Fix.TRUNCATE] == []


def _named_commands(text: str) -> Iterator[list[str]]:
    for span in re.findall(r"`([^`]*)`", text):
        words = span.split()
        if words[:1] == ["logtool"]:
            yield words[1:]


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def test_remedies_name_existing_commands():
    commands = _commands()
    index_subcommands = commands["index"].commands
    seen, bad = 0, []
    for k in KINDS:
        for text in (k.meaning, k.remedy):
            for words in _named_commands(text):
                seen += 1
                if not words or words[0] not in commands:
                    bad.append(f"{k.name}: `logtool {' '.join(words)}`")
                elif words[0] == "index" and (len(words) < 2 or words[1] not in index_subcommands):
                    bad.append(f"{k.name}: `logtool {' '.join(words)}` (index takes {sorted(index_subcommands)})")
    assert seen > 10
    assert not bad, "commands named in the catalog that logtool does not have:\n" + "\n".join(bad)


def test_kinds_are_constants_of_their_own_name():
    # Code names a kind by its constant (`finding(UNREADABLE, ...)`, `f.name == UNREADABLE.name`), so a typo is a
    # NameError or ImportError; the constant itself must not lie: each is bound to the kind of its name, and
    # KINDS is exactly the constants, in catalog order.
    constants = {n: v for n, v in vars(findings).items() if isinstance(v, Kind)}
    assert [n for n, k in constants.items() if k.name != n] == []
    assert list(constants.values()) == list(KINDS)
    assert all(BY_NAME[k.name] is k and getattr(findings, k.name) is k for k in KINDS)


def test_flags():
    # The decisions that read the flags: the run failed (checks/engine.py, spark/summary.py, truncate's plan),
    # and what `index verify` shows (commands/index.py).
    assert {k.name for k in KINDS if k.operational} == {"UNREADABLE", "NOT_AUDITED"}
    index_scope = {k.name for k in KINDS if k.index_scope}
    assert {k.name for k in KINDS if k.group is Group.INDEX} <= index_scope
    assert index_scope - {k.name for k in KINDS if k.group is Group.INDEX} == {
        "ORPHAN_INDEX", "UNREADABLE", "NOT_KAFKA", "FILE_SHRANK_WHILE_READ"}


def _kind_arguments(tree: ast.Module) -> Iterator[ast.expr]:
    """The arguments that name a kind: the first of finding/report/_report and of .add on a sink or report,
    the second of RecordError and FrameStop (its reason)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("finding", "report"):
            yield _arg(node, 0, "kind")
        elif isinstance(f, ast.Attribute) and f.attr == "_report":
            yield _arg(node, 0, "kind")
        elif isinstance(f, ast.Attribute) and f.attr == "add":
            receiver = f.value.attr if isinstance(f.value, ast.Attribute) else getattr(f.value, "id", None)
            if receiver in ("Sink", "sink", "rep"):
                yield _arg(node, 0, "kind")
        elif isinstance(f, ast.Name) and f.id == "RecordError":
            yield _arg(node, 1, "kind")
        elif isinstance(f, ast.Name) and f.id == "FrameStop":
            yield _arg(node, 1, "reason")


def _named_kinds(node: ast.expr | None) -> Iterator[ast.Name]:
    """The catalog constants an argument can be: `X`, `X.name`, or the branches of `a if c else b`."""
    if isinstance(node, ast.Attribute) and node.attr == "name":
        node = node.value
    if isinstance(node, ast.Name) and _UPPER_SNAKE.match(node.id):
        yield node
    elif isinstance(node, ast.IfExp):
        yield from _named_kinds(node.body)
        yield from _named_kinds(node.orelse)


def _imported_from_findings(tree: ast.Module) -> dict[str, str]:
    """Local name -> catalog name, for `from logtool.findings import X [as Y]`."""
    return {a.asname or a.name: a.name for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "logtool.findings" for a in node.names}


def test_kinds_named_in_code_are_in_the_catalog():
    # Where the code names a kind, it names a constant imported from the catalog (a module's own constant of
    # the same shape would be a second vocabulary).
    named, bad = 0, []
    for module, (path, tree) in SOURCES.items():
        if module == "logtool.findings":
            continue
        imported = _imported_from_findings(tree)
        for arg in _kind_arguments(tree):
            for name in _named_kinds(arg):
                named += 1
                if imported.get(name.id) not in BY_NAME:
                    bad.append(f"{_rel(path)}:{name.lineno}: {name.id}")
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                bad.append(f"{_rel(path)}:{arg.lineno}: {arg.value!r} (name the catalog's constant)")
    assert named > 80  # the scan reaches the checks
    assert not bad, "kinds named in the code but not imported from logtool/findings.py:\n" + "\n".join(bad)


def test_no_kind_name_is_spelled_as_a_string():
    # A kind's name as a string literal would be checked by nothing: every one is its constant (`X` or `X.name`).
    bad = [f"{_rel(path)}:{node.lineno}: {node.value}"
           for module, (path, tree) in SOURCES.items() if module != "logtool.findings"
           for node in ast.walk(tree)
           if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in BY_NAME]
    assert not bad, "\n".join(bad)


def test_no_kind_tables_of_strings_in_checks():
    # logtool/checks/ picks kinds from tables (_SUFFIXED_DIRS, _BEYOND): no UPPER_SNAKE literal there at all, so a
    # misspelt kind in a table cannot pass as some other word.
    bad = [f"{_rel(path)}:{node.lineno}: {node.value}"
           for module, (path, tree) in SOURCES.items() if module.startswith("logtool.checks")
           for node in ast.walk(tree)
           if isinstance(node, ast.Constant) and isinstance(node.value, str) and _UPPER_SNAKE.match(node.value)]
    assert not bad, "\n".join(bad)


def test_sink_caps_per_kind_and_file():
    capped = BY_NAME["INDEX_WRONG_POSITION"]
    assert capped.cap == 5
    sink = Sink("a.index")
    for i in range(12):
        sink.add("INDEX_WRONG_POSITION", f"entry {i}", position=8 * i)
    for i in range(3):
        sink.add("INDEX_WRONG_POSITION", f"entry {i}", file="b.index")
    uncapped = next(k for k in KINDS if k.group is Group.LOG_DIR)
    assert uncapped.cap is None
    for i in range(30):
        sink.add(uncapped.name, f"entry {i}", file="checkpoint")
    found = sink.done()

    a = [f for f in found if f.file == "a.index"]
    assert [f.message for f in a] == [f"entry {i}" for i in range(5)] + ["... and 7 more entries like the above"]
    assert all(f.kind is capped for f in a)
    b = [f for f in found if f.file == "b.index"]
    assert [f.message for f in b] == ["entry 0", "entry 1", "entry 2"]
    c = [f for f in found if f.file == "checkpoint"]
    assert [f.message for f in c] == [f"entry {i}" for i in range(30)]

    # Files are counted apart: 6 in one file and 6 in another are each one over the cap.
    sink = Sink()
    for i in range(6):
        sink.add("INDEX_WRONG_POSITION", f"x{i}", file="x.index")
        sink.add("INDEX_WRONG_POSITION", f"y{i}", file="y.index")
    found = sink.done()
    for file in ("x.index", "y.index"):
        messages = [f.message for f in found if f.file == file]
        assert len(messages) == 6 and messages[-1] == "... and 1 more entries like the above"


# ---------------------------------------------------------------------------------------------------------
# 3. Docs


@pytest.mark.parametrize("path", [()] + [p for p, _ in cliref.commands()], ids=lambda p: " ".join(p) or "logtool")
def test_every_help_teaches(path):
    """One line of purpose, real examples, every option explained, the exit codes. (The docs and the man
    pages are made from these texts: tests/house/test_docs.py holds them to that.)"""
    text = cliref.help_text(path, width=100)
    examples = re.findall(r"^    (logtool|spark-submit) .+$", text, re.M)
    assert "Examples:" in text and len(examples) >= 2, text
    assert "Exit codes: 0 nothing wrong; 1 problems repaired; 4 problems found; 8 could not do the job" in text
    cmd = dict(cliref.commands())[path] if path else cli
    silent = [p.opts[0] for p in cmd.params if isinstance(p, click.Option) and not p.help and p.name != "help"]
    assert silent == [], f"options without help: {silent}"
    if cmd.short_help is None and path:
        pytest.fail(f"{' '.join(path)} has no one-line short_help for `logtool --help`")


# ---------------------------------------------------------------------------------------------------------
# 4. lastSequence at base offset 0


def _idempotent_batch() -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=4242,
                                        producer_epoch=3, base_sequence=7, batch_size=1 << 20)
    for i in range(5):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v%d" % i, headers=[])
    return bytes(builder.build())


def test_last_sequence_at_base_offset_zero():
    buf = _idempotent_batch()
    view = read_entry(buf, 0, len(buf))
    assert isinstance(view, BatchView)
    assert (view.base_offset, view.last_offset, view.count) == (0, 4, 5)
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (4242, 3, 7)
    assert view.last_sequence == 11


def test_dump_shows_last_sequence_at_base_offset_zero(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(_idempotent_batch())
    res = run_logtool("dump", str(part))
    assert res.returncode == 0, res.stderr
    assert "baseOffset: 0 lastOffset: 4 count: 5 baseSequence: 7 lastSequence: 11 producerId: 4242" in res.stdout
