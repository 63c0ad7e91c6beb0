"""`logtool restore RUN`: put back every file a repair kept in the quarantine."""
from __future__ import annotations

from pathlib import Path

import click

from logtool.recovery.quarantine import QuarantineError, restore


@click.command("restore")
@click.argument("run_dir", type=click.Path(path_type=Path))
def command(run_dir: Path) -> int:
    """Undo a repair: restore the files of one quarantine run, byte for byte."""
    try:
        entries = restore(run_dir)
    except QuarantineError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"{run_dir}: {e.strerror or e}") from None
    for e in entries:
        click.echo(f"{'removed' if e.stored is None else 'restored'} {e.original}")
    return 0
