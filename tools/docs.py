"""Real output for the docs: scratch copies of the bundled sample with a planted problem (the scenarios),
commands run in them on a terminal 80 columns wide, and the pages generated from the code (the command
reference from the Click objects, the findings catalog from logtool/findings.py with an example of each kind
taken from a real run).

The docs build (docs/conf.py) calls `generate()` and runs every `{logtool-run}` block of the pages through
`Session.run`, so no output shown on the site is copied by hand; README.md's examples come from the same
sessions (tools/readme.py).

    python -m tools.docs run SCENARIO 'logtool verify data'     # one command in a fresh scenario
    python -m tools.docs generate DIR                           # the generated pages, as the build writes them
"""
from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fixtures.generator import flip_bit, iter_entry_headers, segment_file, tear_last_entry
from logtool.findings import KINDS, AtStart, Fix, Group, Kind
from tools import cliref

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "fixtures" / "sample-logdir"
BIN = Path(sys.executable).parent  # the venv's bin: `logtool` and `python` of the docs are these
COLUMNS = 80

# Every session lives in a fresh /tmp/logtool-XXXXXXXX; the docs show it as DISPLAY, which has the same length,
# so what a terminal wraps is wrapped where it would be with that name.
DISPLAY = "/tmp/logtool-incident"
_PREFIX, _BASE = "logtool-", "/tmp"

# A quarantine run's name: UTC time, pid, a random part and the command (different on every run).
RUN_NAME = re.compile(r"\d{8}T\d{6}Z-\d+-[0-9a-f]+-[a-z-]+")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")
_EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\b.*$")


# ---------------------------------------------------------------------------------------------------------
# Scenarios: what each page's session starts from. `data` is always the log dir (a copy of the sample).


def _sample(ws: Path) -> None:
    shutil.copytree(SAMPLE, ws / "data", symlinks=True)


def _last_log(partition: Path) -> Path:
    return sorted(partition.glob("*.log"))[-1]


def _crash(ws: Path) -> None:
    """After an unclean stop and an fsck: a torn last batch, and lost+found in the log dir's root."""
    _sample(ws)
    tear_last_entry(_last_log(ws / "data" / "orders-0"))
    (ws / "data" / "lost+found").mkdir()
    (ws / "data" / "lost+found" / "#131075").write_bytes(b"\0" * 512)


def _power_cut(ws: Path) -> None:
    """The page cache's last writes never reached the disk: payments-1's last segment lost its last ten
    batches (their blocks read back as zeros), while the checkpoints, written before, remember them."""
    _sample(ws)
    log = _last_log(ws / "data" / "payments-1")
    size = log.stat().st_size
    headers = list(iter_entry_headers(log.read_bytes()))
    os.truncate(log, headers[-10].position)
    os.truncate(log, size)  # the lost blocks read as zeros


def _disk_full(ws: Path) -> None:
    """A full disk: orders-0's last batch written in part, and a checkpoint's .tmp left empty."""
    _sample(ws)
    tear_last_entry(_last_log(ws / "data" / "orders-0"))
    (ws / "data" / "recovery-point-offset-checkpoint.tmp").write_bytes(b"")


def _bad_index(ws: Path) -> None:
    """orders-0's first .index points one entry at the wrong byte; payments-1's last .timeindex lost 4 bytes;
    legacy-events-0's second segment has no .index."""
    _sample(ws)
    data = ws / "data"
    index = segment_file(data / "orders-0", 0, ".index")
    raw = bytearray(index.read_bytes())
    position = struct.unpack(">i", raw[12:16])[0]
    raw[12:16] = struct.pack(">i", position + 7)
    index.write_bytes(bytes(raw))
    timeindex = sorted((data / "payments-1").glob("*.timeindex"))[-1]
    os.truncate(timeindex, timeindex.stat().st_size - 4)
    sorted((data / "legacy-events-0").glob("*.index"))[-1].unlink()


def _fleet(ws: Path) -> None:
    """Three brokers' log dirs with planted damage and diverging replicas (fixtures/fleet.py)."""
    from fixtures.fleet import EXAMPLE_TOPICS, write_fleet
    write_fleet(ws / "fleet", EXAMPLE_TOPICS, brokers=3)


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def _internal(ws: Path) -> None:
    """A transactional topic and a __consumer_offsets partition, beside the sample (which has neither)."""
    from fixtures import generator as g
    _sample(ws)
    data, entries, offset = ws / "data", [], 0
    # Producer 2012 commits two transactions and aborts one; 3012 commits one and leaves one open.
    for producer_id, outcomes in ((2012, (True, False, True)), (3012, (True, None))):
        for n, commit in enumerate(outcomes):
            producer = g.Producer(producer_id, producer_epoch=1, base_sequence=5 * n, transactional=True)
            start = g.FIXED_TIME_MS + offset * 10
            batch = g.build_batches(g.BatchSpec(batches=1, records_per_batch=5, producer=producer,
                                                base_timestamp=start, seed=offset), first_offset=offset)
            entries += batch
            offset += 5
            if commit is not None:
                entries.append(g.marker_batch(producer, offset, commit, start + 40))
                offset += 1
    payments = g.write_partition(data, "payments", 0, entries).path
    # The broker's index of aborted transactions (neither library writes one): producer 2012's abort of
    # offsets 6..11, after which the last stable offset is 12 (no other transaction was open).
    (payments / "00000000000000000000.txnindex").write_bytes(struct.pack(">hqqqq", 0, 2012, 6, 11, 12))
    # A consumer group's committed offset, as the group coordinator writes it: OffsetCommit key version 1
    # (group, topic, partition) and value version 3 (offset, leader epoch, metadata, commit time).
    key = struct.pack(">h", 1) + _string("billing") + _string("payments") + struct.pack(">i", 0)
    value = struct.pack(">hqi", 3, 16, 0) + _string("") + struct.pack(">q", g.FIXED_TIME_MS + 500)
    commit = g.Record(key, value, g.FIXED_TIME_MS + 500)
    g.write_partition(data, "__consumer_offsets", 12,
                      g.build_batches(g.BatchSpec(batches=1, records=[[commit]])))


def _strays(ws: Path) -> None:
    """Leftovers and strangers in the log dir (for the catalog's examples)."""
    _sample(ws)
    data = ws / "data"
    orders = data / "orders-0"
    (orders / "00000000000000000500.index").write_bytes(b"")
    (orders / "notes.txt").write_text("copied by hand\n")
    shutil.copy(segment_file(orders, 0, ".log"), orders / "00000000000000000000.log.deleted")
    sorted((data / "legacy-events-0").glob("*.timeindex"))[-1].unlink()
    (data / "meta.properties").unlink()
    (data / ".kafka_cleanshutdown").write_bytes(b"")
    for suffix in ("delete", "future", "stray"):
        shutil.copytree(data / "payments-1", data / f"payments-1.9f3c1e5a7b2d4c6e8f0a1b3c5d7e9f01-{suffix}")
    os.symlink(data / "orders-0", data / "orders-7")
    (data / "log-start-offset-checkpoint.tmp").write_text("0\n")
    (data / "orders-9").mkdir()
    (data / "orders-9" / "partition.metadata").write_text((orders / "partition.metadata").read_text())
    (orders / "00000000000000000240.log").write_bytes(b"")


def _framing(ws: Path) -> None:
    """Damage of every shape in the bytes and side files (for the catalog's examples)."""
    _sample(ws)
    data = ws / "data"
    with open(_last_log(data / "orders-0"), "ab") as f:
        f.write(b"\x01\x02\x03\x04\x05")
    with open(_last_log(data / "payments-1"), "ab") as f:
        f.write(bytes(range(7, 250)) * 2)
    first = segment_file(data / "legacy-events-0", 0, ".log")
    headers = list(iter_entry_headers(first.read_bytes()))
    with open(first, "r+b") as f:
        f.seek(headers[-3].position)
        f.write(b"\0" * (first.stat().st_size - headers[-3].position))
    (data / "clicks-2" / "leader-epoch-checkpoint").write_text("0\n1\nnot an entry\n")
    (data / "orders-0" / "partition.metadata").write_text("version: 9\n")
    cp = data / "log-start-offset-checkpoint"
    cp.write_text(cp.read_text().replace("orders 0 0", "orders 0 900"))
    (data / "cleaner-offset-checkpoint").write_text("0\n1\npayments 1 9999\n")
    flip_bit(segment_file(data / "clicks-2", 64, ".log"), 40)


SCENARIOS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "empty": ("an empty directory", lambda ws: None),
    "sample": ("the bundled sample log dir as it is (clicks-2 has a flipped bit and a torn tail)", _sample),
    "crash": ("after a crash and an fsck: a torn batch in orders-0, lost+found in the log dir", _crash),
    "power-cut": ("a power cut: payments-1 lost its last ten batches, their blocks zeros", _power_cut),
    "disk-full": ("a full disk: a half-written batch in orders-0, an empty checkpoint .tmp", _disk_full),
    "bad-index": ("a wrong .index entry, a .timeindex cut short, a missing .index", _bad_index),
    "fleet": ("three brokers' log dirs with planted damage and diverging replicas", _fleet),
    "strays": ("leftovers, strangers and renamed partition dirs in the sample log dir", _strays),
    "framing": ("damage of every shape in the sample's bytes and side files", _framing),
    "internal": ("the sample with a transactional topic (payments-0) and a __consumer_offsets partition added",
                 _internal),
}


# ---------------------------------------------------------------------------------------------------------
# Running commands as a person on call would see them


def on_terminal(command: str, cwd: Path, env: dict[str, str], columns: int = COLUMNS,
                timeout: float = 600) -> tuple[int, str, str]:
    """Run `command` (bash) with stdout on a terminal `columns` wide (stderr apart, so that no progress
    display is drawn); returns the exit code, stdout as the terminal showed it (no colours) and stderr."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["bash", "-c", command], stdin=subprocess.DEVNULL, stdout=terminal, stderr=err,
                                cwd=cwd, env=env, start_new_session=True)
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(controller)
        code = proc.wait(timeout)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    out = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return code, _ANSI.sub("", out), _ANSI.sub("", stderr)


@dataclass
class Run:
    command: str  # as shown
    expected: int
    code: int
    output: str  # stdout, then stderr, as shown

    def shown(self) -> str:
        return f"$ {self.command}\n{self.output}".rstrip("\n")


class CommandFailed(Exception):
    pass


class Session:
    """A scratch directory set up by a scenario, where a page's commands run one after the other."""

    def __init__(self, scenario: str = "sample", columns: int = COLUMNS, at_checkout: bool = False) -> None:
        if scenario not in SCENARIOS:
            raise KeyError(f"no scenario {scenario!r}; there are {', '.join(SCENARIOS)}")
        self.scenario, self.columns = scenario, columns
        self.path = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=_BASE))
        assert len(str(self.path)) == len(DISPLAY), self.path
        SCENARIOS[scenario][1](self.path)
        self.cwd = ROOT if at_checkout else self.path
        self.env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                        COLUMNS=str(columns), LINES="50", TERM="xterm", NO_COLOR="1", LC_ALL="C.UTF-8",
                        PYTHONPATH=str(ROOT))
        self.env.pop("VIRTUAL_ENV", None)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def shown(self, text: str) -> str:
        """Output as the docs show it: the session's directory under its display name."""
        return text.replace(str(self.path), DISPLAY)

    def run(self, line: str) -> Run:
        """Run one command line as written in the docs: `logtool verify data  # exit 4` expects exit 4 (no
        comment: 0). Commands run in the session's directory, written DISPLAY in commands and output; a line
        `cd DIR` moves there (the checkout, `cd -`, is where a session starts when `at_checkout`). Raises
        CommandFailed on another exit code."""
        match = _EXIT.search(line)
        expected = int(match.group(1)) if match else 0
        command = line.replace(DISPLAY, str(self.path))
        if command.startswith("cd "):
            target = Path(command[3:].split("#")[0].strip())
            self.cwd = (self.cwd / target).resolve()
            return Run(line, expected, 0, "")
        code, out, err = on_terminal(command, self.cwd, self.env, self.columns)
        text = self.shown(out + err)
        run = Run(line, expected, code, text)
        if code != expected:
            raise CommandFailed(f"`{line}` in scenario {self.scenario!r} exited {code}, the docs say {expected}:\n"
                                + text)
        return run


@contextmanager
def session(scenario: str = "sample", at_checkout: bool = False) -> Iterator[Session]:
    s = Session(scenario, at_checkout=at_checkout)
    try:
        yield s
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------------------
# Examples of each finding kind, from real runs of `logtool verify` over the scenarios

_FINDING = re.compile(r"^  (error|warning|info) +(LT\d{3}) ")
EXAMPLE_COMMAND = "logtool verify --show-info data"
EXAMPLE_SCENARIOS = ("sample", "crash", "power-cut", "disk-full", "bad-index", "strays", "framing")


def finding_examples(scenarios: tuple[str, ...] = EXAMPLE_SCENARIOS) -> dict[str, tuple[str, str]]:
    """code -> (scenario, the finding as EXAMPLE_COMMAND printed it at 80 columns), the first seen."""
    found: dict[str, tuple[str, str]] = {}
    for name in scenarios:
        with session(name) as s:
            code, out, err = on_terminal(EXAMPLE_COMMAND, s.path, s.env)
            if code not in (0, 1, 4, 8):
                raise CommandFailed(f"verify in scenario {name} exited {code}: {err}")
            lines = s.shown(out).splitlines()
            for i, line in enumerate(lines):
                m = _FINDING.match(line)
                if not m or m.group(2) in found:
                    continue
                block = [line]
                for more in lines[i + 1:]:
                    if not more.startswith("     ") or _FINDING.match(more):
                        break
                    block.append(more)
                found[m.group(2)] = (name, "\n".join(block))
    return found


# ---------------------------------------------------------------------------------------------------------
# The generated pages

GROUP_TITLES = {
    Group.FRAMING: "LT1xx: segment framing",
    Group.RECORDS: "LT2xx: records (verify --deep)",
    Group.INDEX: "LT3xx: indexes",
    Group.PARTITION: "LT4xx: the partition directory",
    Group.LOG_DIR: "LT5xx: paths and log dirs",
    Group.PRODUCERS: "LT6xx: producers, transactions, consumer offsets",
    Group.METADATA: "LT7xx: the log dir held against the KRaft metadata",
}

FIX_WORDS = {
    Fix.TRUNCATE: "`logtool truncate` cuts the log where Kafka's recovery cuts it",
    Fix.TRUNCATE_STRICT: "`logtool truncate --strict` cuts here (Kafka's recovery does not, so the default plan "
                         "only names it)",
    Fix.REBUILD_INDEXES: "`logtool index rebuild` (or `truncate`) writes the index recovery would build",
    Fix.LEFTOVER: "`logtool truncate` finishes or discards the leftover as the broker's loader does",
    Fix.LEADER_EPOCHS: "`logtool truncate` drops the leader-epoch entries past the log end",
    Fix.SNAPSHOTS: "`logtool truncate` removes the producer snapshot",
    Fix.CHECKPOINTS: "`logtool truncate` corrects the checkpoint entry as the broker would at load",
    Fix.MOVE_OUT: "`logtool truncate --apply` moves the directory into its quarantine, whole",
    Fix.META_PROPERTIES: "`logtool truncate` rebuilds meta.properties where the broker's other log dirs agree",
}


def md(text: str) -> str:
    """Catalog text as Markdown: what Markdown would take for markup (`<topic>` as HTML, `__consumer_offsets`
    as emphasis) escaped, except inside `code` spans, which the catalog means as code."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else re.sub(r"([\\*_<>\[\]#|])", r"\\\1", p) for p in parts)


def anchor(kind: Kind) -> str:
    return kind.code.lower()


def kafka_does(kind: Kind) -> str:
    """What Kafka does about a kind, from the catalog's data (the meaning says the rest)."""
    parts = []
    if kind.cuts:
        parts.append("Its recovery ends the segment's valid prefix here: the bytes from this point on, and every "
                     "later segment of the partition, leave the log.")
    else:
        parts.append("Its recovery does not cut the log here.")
    if kind.at_start is AtStart.REFUSES:
        parts.append("The broker refuses to start with this log dir.")
    elif kind.at_start is AtStart.LOG_DIR_OFFLINE:
        parts.append("The broker takes the log dir offline (and stops if it has no other).")
    return " ".join(parts)


def findings_page(examples: dict[str, tuple[str, str]]) -> str:
    """The findings catalog as MyST Markdown: one section per kind, anchored by its code (`#lt101`)."""
    out = []
    group = None
    for kind in KINDS:
        if kind.group is not group:
            group = kind.group
            out.append(f"## {GROUP_TITLES[group]}\n")
        out.append(f"({anchor(kind)})=\n### {kind.code} {md(kind.name)}\n")
        out.append(f"**Severity:** {kind.severity}"
                   + (" · **stops the broker:** " + kind.at_start.value if kind.at_start else "") + "\n")
        out.append(f"**Meaning.** {md(kind.meaning)}\n")
        out.append(f"**What Kafka does.** {kafka_does(kind)}\n")
        out.append(f"**Remedy.** {md(kind.remedy)}"
                   + (f" logtool's repair: {FIX_WORDS[kind.fix]}." if kind.fix else "") + "\n")
        if kind.code in examples:
            scenario, text = examples[kind.code]
            out.append(f"**Example** (`{EXAMPLE_COMMAND}` in the scenario *{SCENARIOS[scenario][0]}*):\n")
            out.append(f"```text\n{text}\n```\n")
        else:
            out.append("**Example.** None of the bundled scenarios plants this one; "
                       f"`logtool verify --explain {kind.code}` prints the above.\n")
    return "\n".join(out)


def reference_page() -> str:
    """Every command's --help at 80 columns, one section each (anchored by the man page's name)."""
    out = []
    for path in [(), *(p for p, _ in cliref.commands())]:
        out.append(f"({cliref.slug(path)}-help)=\n## `{cliref.title(path)}`\n")
        out.append(f"```text\n{cliref.help_text(path)}\n```\n")
    return "\n".join(out)


def generate(target: Path, examples: dict[str, tuple[str, str]] | None = None) -> list[Path]:
    """Write the generated pages (included by docs/findings.md and docs/reference.md) into `target`;
    files whose content is unchanged are left alone. Returns the files written."""
    target.mkdir(parents=True, exist_ok=True)
    pages = {
        "findings.md": findings_page(finding_examples() if examples is None else examples),
        "reference.md": reference_page(),
    }
    for path, _ in [((), None), *cliref.commands()]:
        pages[f"help/{cliref.slug(path)}.txt"] = cliref.help_text(path) + "\n"
    return write_changed(target, pages)


def write_changed(target: Path, pages: dict[str, str]) -> list[Path]:
    """Write each page (a path under `target` -> its text) whose file differs, so that an unchanged page
    keeps its mtime (Sphinx rebuilds what changed); returns the files written."""
    written = []
    for name, text in pages.items():
        file = target / name
        file.parent.mkdir(parents=True, exist_ok=True)
        if not file.exists() or file.read_text() != text:
            file.write_text(text)
            written.append(file)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    run = sub.add_parser("run", help="run command lines in a fresh scenario, as the docs show them")
    run.add_argument("scenario", choices=list(SCENARIOS))
    run.add_argument("lines", nargs="+")
    gen = sub.add_parser("generate", help="write the generated pages")
    gen.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    if args.what == "run":
        with session(args.scenario) as s:
            for line in args.lines:
                try:
                    print(s.run(line).shown())
                except CommandFailed as e:
                    print(e, file=sys.stderr)
                    return 1
        return 0
    for file in generate(args.target):
        print(f"wrote {file}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
