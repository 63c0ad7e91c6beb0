"""`logtool restore RUN`: put back every file a repair kept in the quarantine."""
from __future__ import annotations

from pathlib import Path

import click

from logtool.commands.common.options import PATH, epilog, format_choice
from logtool.commands.common.failure import Failure
from logtool.commands.common.repairing import writing
from logtool.recovery.restore import restore
from logtool.render.emit import emit
from logtool.render.repair import render_restored


@click.command("restore", short_help="Undo a repair, byte for byte.", epilog=epilog([
    ("logtool restore /var/tmp/q/20261124T031500Z-4242-truncate", "put back what that truncate changed"),
    ("logtool restore --force /var/tmp/q/20261124T031500Z-4242-index-rebuild",
     "even over files changed since the repair"),
], "8 here also: a broker holds the log dir's lock, or files changed since the repair (without --force); "
   "nothing is written then."))
@click.argument("run_dir", type=PATH)
@click.option("--force", is_flag=True, help="restore even files that changed since the repair")
@format_choice("text", "json", what="text for people, json for machines (each file put back)")
def command(run_dir: Path, force: bool, fmt: str) -> int:
    """Undo a repair: restore the files of one quarantine run (the directory a repair named), byte for
    byte, with their owners and modes. Refuses while a broker holds a log dir's lock, and when files
    changed since the repair, listing them, unless --force."""
    with writing():
        try:
            done = restore(run_dir, force=force)
        except OSError as e:  # the run itself cannot be read; nothing was written
            raise Failure(f"{e.filename or run_dir}: {e.strerror or e}; nothing was restored") from None
    return emit(done, fmt, render_restored)
