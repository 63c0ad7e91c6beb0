"""What the writing commands (truncate, index rebuild, restore) share: how a refused or stopped write becomes
the command's one line and exit code, the command line that finishes a run, and finishing the runs a
stopped repair left before a new plan is made."""
from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

from logtool.commands.common.failure import Failure
from logtool.recovery import executor
from logtool.recovery.errors import RepairRefused, RepairStopped


@contextlib.contextmanager
def writing() -> Iterator[None]:
    """Refused (nothing written) and stopped (the run named, with the commands that finish or undo it) both
    end the command with their one line: exit 8, or 143 for a SIGTERM."""
    try:
        yield
    except RepairRefused as e:
        raise Failure(str(e)) from None
    except RepairStopped as e:
        raise Failure(str(e), e.exit_code) from None


def command_line(*words: object) -> str:
    """The command as the user can paste it again (absolute paths: a rerun may start elsewhere)."""
    return shlex.join(["logtool", *(str(w.absolute()) if isinstance(w, Path) else str(w) for w in words)])


def finish_unfinished(quarantine: Path, paths: list[Path]) -> list[executor.Applied]:
    """Finish every run of this quarantine that a stopped repair of these PATHs left: a new plan made of a
    half-repaired dir would be wrong (a cut segment looks clean, and the later ones would stay)."""
    done = []
    with writing():
        for run_dir in executor.unfinished_runs(quarantine, paths):
            finished = executor.resume(run_dir)
            if finished is not None:
                done.append(finished)
                print(f"logtool: finished the interrupted repair {run_dir}", file=sys.stderr)
    return done
