"""Inputs, workers and verdicts.

An input is fully determined by (seed, index): `random.Random(f"logtool-fuzz/{seed}/{index}")` picks the
(file kind, target) pair (the pairs are visited in a seeded order, every pair once per round), the seed
file, the mutations and the command's arguments. So `Input(seed, index)` reproduces any input exactly, on
the same fixtures.

Each input runs in a process of its own, forked from the driver: the worker builds the input (a copy of
the seed's partition dir or of the sample log dir, with the mutated file in it), writes `spec.json`, caps
its address space (RLIMIT_AS), tells the driver it starts the target, runs it with stdout and stderr sent
to files, and writes `result.json`. The driver kills a worker that outlives its time limit, and takes
its peak RSS from `wait4`. The driver itself holds nothing large, so a worker starts with the resident
set of a freshly imported `logtool` (about 30 MB), as the console script does.

Defect classes (an input may fall in several):
- traceback: an exception escaped (a parser raised something it does not document; the CLI raised, or
  printed 'Traceback' or 'internal error');
- hang: the target did not finish within its time limit;
- signal: the worker was killed by a signal it did not get from the driver (or exited without a result);
- memory: peak RSS over the limit (300 MB), or a MemoryError under the address-space cap;
- exit-code: the CLI exited with a code outside {0, 1, 4, 8, 16};
- wrote: a read-only command changed the log dir;
- bad-output: `--format json`/`jsonl` printed something that does not parse.
"""
from __future__ import annotations

import json
import os
import random
import resource
import select
import shutil
import signal
import sys
import tarfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

from fuzz import mutate as mut
from fuzz import seeds as seedmod
from fuzz import targets as tg

EXIT_CODES = {0, 1, 4, 8, 16}
CLI_LIMIT_S = 10.0
PARSER_LIMIT_S = 3.0
BUILD_LIMIT_S = 60.0  # building an input (a decompression bomb can take a second): not the target's time
RSS_LIMIT = 300 * 1024 * 1024
FRESH_RSS = 30 * 1024 * 1024  # a freshly started `logtool` process
AS_LIMIT = 4 << 30
CLASSES = ("traceback", "hang", "signal", "memory", "exit-code", "wrote", "bad-output")


# --- inputs ----------------------------------------------------------------------------------------------

def all_pairs() -> list[tuple[str, str]]:
    return tg.pairs(seedmod.kinds())


def pair_for(seed: int, index: int, pairs: list[tuple[str, str]]) -> tuple[str, str]:
    """Every pair once per round of len(pairs) inputs, in an order seeded per round."""
    rnd, at = divmod(index, len(pairs))
    order = list(range(len(pairs)))
    random.Random(f"logtool-fuzz-order/{seed}/{rnd}").shuffle(order)
    return pairs[order[at]]


@dataclass
class Spec:
    seed: int
    index: int
    kind: str
    target: str
    seed_file: str
    mutations: list[str]
    file: str  # the mutated file, relative to the input dir
    logdir: str
    partition: str | None
    argv: list[str] | None
    size: int
    max_base: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _copy_dir_files(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for n in sorted(os.listdir(src)):
        p = src / n
        if p.is_file() and not p.is_symlink():
            shutil.copyfile(p, dst / n)


_RAW_BOMB = mut.bomb.__wrapped__  # the uncached builder (mutate.bomb is an lru_cache)


def _bomb_cache(cache: Path):
    """`mutate.bomb` through files in `cache`: built once per run, read by every worker that needs one."""
    def cached(codec: int, size: int, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
        path = cache / f"bomb-{codec}-{size}-{(prefix + b'/' + suffix).hex()}"
        try:
            return path.read_bytes()
        except FileNotFoundError:
            data = _RAW_BOMB(codec, size, prefix, suffix)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            return data
    return cached


def build_input(seed: int, index: int, where: Path, pairs: list[tuple[str, str]] | None = None,
                target: tuple[str, str] | None = None) -> tuple[Spec, random.Random]:
    """Write input (seed, index) under `where` (an empty dir); its spec, and the rng the target goes on with."""
    pairs = pairs if pairs is not None else all_pairs()
    kind, tname = target if target is not None else pair_for(seed, index, pairs)
    rng = random.Random(f"logtool-fuzz/{seed}/{index}")
    pool = seedmod.all_seeds()[kind]
    s = rng.choice(pool)
    others = [(o.label, o.path.read_bytes()) for o in rng.sample(pool, min(3, len(pool))) if o is not s]
    data, steps = mut.mutate(s.path.read_bytes(), kind, rng, others)
    logdir = where / "logdir"
    if s.scope == "logdir":
        _copy_dir_files(s.host, logdir)
        for child in sorted(os.listdir(s.host)):
            if (s.host / child).is_dir():
                _copy_dir_files(s.host / child, logdir / child)
        target_file = logdir / kind
        partition = None
    else:
        partition = logdir / s.host.name
        _copy_dir_files(s.host, partition)
        target_file = partition / s.path.name
    target_file.write_bytes(data)
    bases = [int(n.split(".")[0]) for n in os.listdir(partition) if n.endswith(".log") and n.split(".")[0].isdigit()] \
        if partition else []
    spec = Spec(seed, index, kind, tname, s.label, steps, str(target_file.relative_to(where)),
                str(logdir.relative_to(where)), str(partition.relative_to(where)) if partition else None, None,
                len(data), max(bases, default=0))
    if tg.is_cli(tname):
        argv_of, _ = tg.CLI[tname]
        ctx = {"logdir": str(logdir), "partition": str(partition), "file": str(target_file), "max_base": spec.max_base}
        spec.argv = argv_of(ctx, rng)
    return spec, rng


def listing(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(dirpath, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


# --- the worker ------------------------------------------------------------------------------------------

def _origin(tb_list) -> str | None:
    """The innermost frame in logtool's own code: where the defect originates."""
    for fr in reversed(tb_list):
        f = fr.filename.replace("\\", "/")
        if "/logtool/" in f and "/fuzz/" not in f:
            return f"{f[f.rindex('/logtool/') + 1:]}:{fr.lineno} in {fr.name}"
    return None


def _write_json(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


def _worker(seed: int, index: int, wd: Path, pairs, started_w: int, limit_as: int,
            forced: tuple[str, str] | None) -> None:
    """The body of a worker process (never returns normally: the caller `os._exit`s)."""
    os.environ["LOGTOOL_DEBUG"] = "1"  # an unexpected exception escapes main with its traceback
    mut.bomb = _bomb_cache(wd.parent / "cache")  # type: ignore[assignment]
    spec, rng = build_input(seed, index, wd, pairs, forced)
    cwd = wd / "cwd"
    cwd.mkdir()
    ctx = {"logdir": str(wd / spec.logdir), "partition": str(wd / spec.partition) if spec.partition else None,
           "file": str(wd / spec.file), "kind": spec.kind, "argv": spec.argv, "rng": rng, "max_base": spec.max_base}
    # A parser target gets the bytes; a command reads the files itself (and the bytes would count in its peak).
    ctx["data"] = None if tg.is_cli(spec.target) else Path(ctx["file"]).read_bytes()
    doc = spec.to_dict()
    doc["before"] = listing(wd / spec.logdir)
    _write_json(wd / "spec.json", doc)
    run = tg.runner(spec.target)
    del doc, spec
    _fresh_peak()
    rss_start = _vm_hwm()
    os.chdir(cwd)
    if limit_as < 0:  # triage: room for -limit_as bytes more than the worker maps now
        limit_as = _vm_size() - limit_as
    if limit_as:
        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    tg.redirect_output(str(wd / "stdout"), str(wd / "stderr"))
    os.write(started_w, b"S")
    t0 = time.monotonic()
    try:
        out = {"outcome": "ok", "result": run(ctx)}
    except BaseException as e:  # noqa: BLE001 - whatever escapes is the finding
        tb = traceback.extract_tb(e.__traceback__)
        out = {"outcome": "exception", "type": type(e).__name__, "message": str(e)[:2000],
               "traceback": "".join(traceback.format_exception(e))[-12000:], "origin": _origin(tb)}
    out["elapsed"] = time.monotonic() - t0
    try:
        sys.stdout.flush()
    except BaseException as e:  # noqa: BLE001 - a failed flush of the output is a defect too
        out.setdefault("flush_error", f"{type(e).__name__}: {e}")
    try:
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    out["hwm_kb"] = _vm_hwm()
    out["rss_start_kb"] = rss_start
    if ctx["argv"] and out["outcome"] == "ok":  # after the peak was taken: parsing the output may take memory
        bad = _check_output(ctx["argv"], wd / "stdout")
        if bad:
            out["output_error"] = bad
    _write_json(wd / "result.json", out)


def _fresh_peak() -> None:
    """Give back what building the input took and restart the peak-RSS count (VmHWM) from here, so the
    peak measured is the target's: `echo 5 > /proc/self/clear_refs` (Linux 4.0+)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


def _vm_rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def _vm_hwm() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# --- verdicts --------------------------------------------------------------------------------------------

@dataclass
class Verdict:
    seed: int
    index: int
    kind: str
    target: str
    defects: list[str]
    symptom: str = ""
    origin: str | None = None
    exit: int | None = None
    peak_rss: int = 0
    rss_start: int = 0  # the worker's resident set when the target started (the driver's size, inherited)
    elapsed: float = 0.0
    spec: dict = field(default_factory=dict)
    detail: str = ""  # traceback or stderr
    signature: str = ""

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["spec"] = {k: v for k, v in self.spec.items() if k != "before"}
        return d


def _read(path: Path, limit: int = 200_000) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _check_output(argv: list[str], stdout_path: Path) -> str | None:
    """For --format json/jsonl: does stdout parse? (None when fine or not JSON.)"""
    if "--format" not in argv:
        return None
    fmt = argv[argv.index("--format") + 1]
    if fmt not in ("json", "jsonl"):
        return None
    try:
        with open(stdout_path, encoding="utf-8") as f:
            if fmt == "json":
                text = f.read()
                if text.strip():
                    json.loads(text)
            else:
                for number, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            json.loads(line)
                        except ValueError as e:
                            return f"jsonl output line {number} does not parse: {e}"
    except UnicodeDecodeError as e:
        return f"stdout is not UTF-8: {e}"
    except ValueError as e:
        return f"{fmt} output does not parse: {e}"
    return None


def judge(seed: int, index: int, wd: Path, status: int, maxrss_kb: int, killed_for: str | None,
          limit: float, forced: tuple[str, str] | None = None) -> Verdict:
    spec_path = wd / "spec.json"
    spec = json.loads(spec_path.read_text()) if spec_path.exists() else {}
    kind, target = (spec.get("kind"), spec.get("target")) if spec else (forced or ("?", "?"))
    result = json.loads((wd / "result.json").read_text()) if (wd / "result.json").exists() else None
    # The target's own peak (VmHWM restarted after the input was built); wait4's figure when it never reported.
    peak_kb = result["hwm_kb"] if result is not None and result.get("hwm_kb") else maxrss_kb
    v = Verdict(seed, index, kind, target, [], spec=spec, peak_rss=peak_kb * 1024,
                rss_start=((result or {}).get("rss_start_kb") or 0) * 1024)
    stderr = _read(wd / "stderr")
    _judge_exit(v, status, killed_for, limit, result is not None, bool(spec))
    if result is not None:
        _judge_result(v, result)
    if v.exit is not None and v.exit not in EXIT_CODES:
        v.defects.append("exit-code")
        v.symptom = v.symptom or f"exit code {v.exit}"
    if "Traceback" in stderr or "internal error" in stderr:
        if "traceback" not in v.defects:
            v.defects.append("traceback")
            v.symptom = v.symptom or next((ln for ln in stderr.splitlines() if "internal error" in ln or "Error" in ln),
                                          "Traceback on stderr")
        v.detail = v.detail or stderr[-12000:]
    if result is not None and result.get("output_error"):
        v.defects.append("bad-output")
        v.symptom = v.symptom or result["output_error"]
    if spec.get("before") is not None and "hang" not in v.defects:
        _judge_log_dir(v, spec, wd)
    _judge_memory(v)
    if v.defects and not v.detail:
        v.detail = stderr[-4000:]
    spec.pop("before", None)  # the driver keeps verdicts: nothing large in them
    v.signature = signature(v)
    return v


def _judge_exit(v: Verdict, status: int, killed_for: str | None, limit: float, reported: bool,
                built: bool) -> None:
    """How the worker ended, when that is a defect: killed for a hang or a slow build, by a signal, or
    without a result (`reported`: it wrote one; `built`: it built its input)."""
    if killed_for == "hang":
        v.defects.append("hang")
        v.symptom = f"no result after {limit:g} s (killed)"
    elif killed_for == "build":
        v.defects.append("harness")
        v.symptom = "building the input took too long"
    elif os.WIFSIGNALED(status):
        v.defects.append("signal")
        v.symptom = f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    elif not reported:
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        if not built:
            v.defects.append("harness")
            v.symptom = f"worker failed while building the input (exit {code})"
        else:
            v.defects.append("signal")
            v.symptom = f"worker exited with status {code} without a result"


def _judge_result(v: Verdict, result: dict) -> None:
    """What the worker reported: the target's exception, or its exit code; a failure to flush stdout."""
    v.elapsed = result.get("elapsed", 0.0)
    if result["outcome"] == "exception":
        v.defects.append("memory" if result["type"] == "MemoryError" else "traceback")
        v.symptom = f"{result['type']}: {result['message'][:300]}"
        v.origin = result.get("origin")
        v.detail = result.get("traceback", "")
    else:
        v.exit = result["result"].get("exit")
    if result.get("flush_error"):
        v.defects.append("traceback")
        v.symptom = v.symptom or f"flushing stdout: {result['flush_error']}"


def _judge_log_dir(v: Verdict, spec: dict, wd: Path) -> None:
    """A read-only target must leave the log dir as the spec listed it before."""
    after = {k: list(x) for k, x in listing(wd / spec["logdir"]).items()}
    if after != spec["before"]:
        before = {(k, tuple(x)) for k, x in spec["before"].items()}
        changed = sorted({(k, tuple(x)) for k, x in after.items()} ^ before)
        v.defects.append("wrote")
        v.symptom = v.symptom or f"a read-only target changed the log dir: {changed[:3]}"


def _judge_memory(v: Verdict) -> None:
    """What the target took on top of the worker it started in, as if that were a fresh `logtool` process: a
    worker forked from a large driver (the test suite's pytest, after the Spark tests) inherits its pages."""
    start = v.rss_start or _vm_rss()  # a worker that never reported: it started as a copy of this driver
    peak = v.peak_rss - start + FRESH_RSS
    if peak > RSS_LIMIT and "memory" not in v.defects:
        v.defects.append("memory")
        v.symptom = v.symptom or f"peak RSS {peak / 2**20:.0f} MB (as a fresh process)"


def signature(v: Verdict) -> str:
    """What makes two defects the same bug: the class, the kind of target, and where it originates."""
    if not v.defects:
        return ""
    cls = v.defects[0]
    family = "cli" if tg.is_cli(v.target) else v.target
    if v.origin:
        exc = "MemoryError" if cls == "memory" else v.symptom.split(":")[0]
        return f"{cls} | {exc} | {v.origin}"
    return f"{cls} | {family} {v.target} | {v.kind} | {v.symptom.split(':')[0][:60]}"


# --- the driver ------------------------------------------------------------------------------------------

@dataclass
class _Job:
    index: int
    pid: int
    wd: Path
    pipe_r: int
    pidfd: int | None
    forked: float
    started: float | None = None
    killed_for: str | None = None
    limit: float = CLI_LIMIT_S


def limit_for(target: str) -> float:
    return CLI_LIMIT_S if tg.is_cli(target) or target not in tg.PARSERS else PARSER_LIMIT_S


def run(seed: int, indexes, jobs: int, base: Path, on_verdict: Callable[[Verdict, Path], None] | None = None,
        limits: dict | None = None, forced: tuple[str, str] | None = None, as_limit: int = AS_LIMIT,
        keep: bool = False) -> list[Verdict]:
    """Run the inputs `indexes` of `seed` in up to `jobs` workers at once; the verdicts in completion order
    (with `on_verdict`, only those with a defect: the driver stays as small as a fresh logtool process, since
    every worker starts with its resident set). `on_verdict(v, wd)` is called while the input's directory
    still exists. `as_limit`: the workers' address-space cap in bytes; negative: that many bytes more than a
    worker has mapped when its target starts (see `triage_memory`). `forced`: run every index on this
    (kind, target) pair instead of the seeded one (the harness tests use it). `limits`: target -> seconds."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "cache").mkdir(exist_ok=True)
    driver = _Driver(seed, base, on_verdict, limits or {}, forced, as_limit, keep)
    todo = list(indexes)
    todo.reverse()
    try:
        while todo or driver.running:
            while todo and len(driver.running) < jobs:
                driver.spawn(todo.pop())
            now = time.monotonic()
            driver.kill_late(now)
            driver.wait(now)
    finally:
        driver.kill_all()
    return driver.verdicts


class _Driver:
    """`run`'s workers: forked, timed, killed when late, and judged when they end."""

    def __init__(self, seed: int, base: Path, on_verdict: Callable[[Verdict, Path], None] | None,
                 limits: dict, forced: tuple[str, str] | None, as_limit: int, keep: bool) -> None:
        self.seed, self.base, self.on_verdict, self.limits = seed, base, on_verdict, limits
        self.forced, self.as_limit, self.keep = forced, as_limit, keep
        self.pairs = all_pairs()
        self.running: dict[int, _Job] = {}
        self.verdicts: list[Verdict] = []
        self.use_pidfd = hasattr(os, "pidfd_open")

    def spawn(self, index: int) -> None:
        wd = self.base / f"in-{index}"
        if wd.exists():
            shutil.rmtree(wd)
        wd.mkdir()
        target = self.forced[1] if self.forced else pair_for(self.seed, index, self.pairs)[1]
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                os.close(r)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _worker(self.seed, index, wd, self.pairs, w, self.as_limit, self.forced)
            except BaseException:  # noqa: BLE001 - a failure to build the input: reported by the driver
                try:
                    with open(wd / "harness-error.txt", "w") as f:
                        f.write(traceback.format_exc())
                except BaseException:  # noqa: BLE001
                    pass
                code = 70
            finally:
                os._exit(code)
        os.close(w)
        limit = self.limits.get(target, limit_for(target))
        self.running[pid] = _Job(index, pid, wd, r, os.pidfd_open(pid) if self.use_pidfd else None, time.monotonic(),
                                 limit=limit)

    def kill_late(self, now: float) -> None:
        """Kill the workers past their deadline: the target's limit once started, the build's before."""
        for job in self.running.values():
            if job.killed_for is None and now >= _deadline(job):
                job.killed_for = "hang" if job.started is not None else "build"
                try:
                    os.kill(job.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def wait(self, now: float) -> None:
        """Wait for a worker to start its target or to end (at most until the next deadline after `now`), and
        reap those that ended."""
        deadlines = [_deadline(j) for j in self.running.values() if j.killed_for is None]
        wait = max(0.0, min(deadlines, default=now + 0.05) - now) if deadlines else 0.05
        fds = [j.pipe_r for j in self.running.values() if j.started is None]
        if self.use_pidfd:
            fds += [j.pidfd for j in self.running.values() if j.pidfd is not None]
            ready, _, _ = select.select(fds, [], [], min(wait, 1.0))
        else:
            ready, _, _ = select.select(fds, [], [], min(wait, 0.01))
        for job in list(self.running.values()):
            if job.started is None and job.pipe_r in ready:
                os.read(job.pipe_r, 1)  # a byte: the target starts; none: the worker is exiting without one
                job.started = time.monotonic()
            pid, status, ru = os.wait4(job.pid, os.WNOHANG)
            if pid:
                del self.running[job.pid]
                self.reap(job, status, ru)

    def reap(self, job: _Job, status: int, ru) -> None:
        os.close(job.pipe_r)
        if job.pidfd is not None:
            os.close(job.pidfd)
        v = judge(self.seed, job.index, job.wd, status, ru.ru_maxrss, job.killed_for, job.limit,
                  self.forced or pair_for(self.seed, job.index, self.pairs))
        if "harness" in v.defects:
            v.detail = _read(job.wd / "harness-error.txt")
        if self.on_verdict is None or v.defects:  # a long run hands clean verdicts to on_verdict only
            self.verdicts.append(v)
        if self.on_verdict:
            self.on_verdict(v, job.wd)
        if not self.keep:
            shutil.rmtree(job.wd, ignore_errors=True)

    def kill_all(self) -> None:
        for job in self.running.values():
            try:
                os.kill(job.pid, signal.SIGKILL)
                os.waitpid(job.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def _deadline(job: _Job) -> float:
    return job.started + job.limit if job.started is not None else job.forked + BUILD_LIMIT_S


def triage_memory(v: Verdict, base: Path) -> Verdict:
    """Where a memory blow-up comes from: the input again, with the address space capped at what the worker
    maps when its target starts plus what the RSS limit leaves, so that the allocation that crosses the line
    fails with a MemoryError and its traceback. Fills in `v.origin` (and the signature) when it does."""
    headroom = RSS_LIMIT - FRESH_RSS  # what a fresh process may grow by, whatever the worker inherited
    forced = (v.kind, v.target) if v.target in tg.EXTRA else None
    [t] = run(v.seed, [v.index], 1, base, as_limit=-headroom, forced=forced)
    if t.origin:
        v.origin = t.origin
        v.detail = (v.detail + "\n" if v.detail else "") + \
            (f"--- triage: the same input under an address-space cap of {headroom >> 20} MB more than at the "
             "start:\n") + \
            t.detail
        v.signature = signature(v)
    return v


def save_reproducer(v: Verdict, wd: Path, dest: Path) -> Path | None:
    """The mutated file, the whole input log dir (tar.gz), the spec and the symptom under dest/<name>/."""
    if not (wd / "spec.json").exists():
        return None
    target = v.target.replace(" ", "_").replace(":", "_").replace("-", "")
    name = f"{v.defects[0]}-{target}-{v.kind}-s{v.seed}-i{v.index}"
    out = dest / name
    out.mkdir(parents=True, exist_ok=True)
    spec = v.spec
    shutil.copyfile(wd / spec["file"], out / Path(spec["file"]).name)
    with tarfile.open(out / "input.tar.gz", "w:gz") as tar:
        tar.add(wd / spec["logdir"], arcname="logdir")
    doc = v.to_dict()
    doc["replay"] = f"python -m bench.fuzz --replay {v.seed}:{v.index}"
    if spec.get("argv"):
        doc["command"] = "logtool " + " ".join(a.replace(str(wd) + "/", "") for a in spec["argv"])
    (out / "defect.json").write_text(json.dumps(doc, indent=2, default=str))
    (out / "symptom.txt").write_text(f"{v.symptom}\norigin: {v.origin}\n\n{v.detail}")
    return out


__all__ = ["CLASSES", "Spec", "Verdict", "all_pairs", "build_input", "judge", "pair_for", "run", "save_reproducer"]
