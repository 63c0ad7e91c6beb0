"""`logtool report`: an audit's summary as one self-contained HTML page."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import click

from logtool import exitcodes
from logtool.commands.common.failure import Failure
from logtool.commands.common.options import PATH, epilog
from logtool.render.report_html import html_report
from logtool.store.layout import PathKind, classify_path


@click.command("report", short_help="An audit's findings as one HTML page to look at.", epilog=epilog([
    ("logtool report /var/tmp/audit", "writes /var/tmp/audit/report.html"),
    ("logtool report /var/tmp/audit -o - > today.html", "the page on standard output"),
]))
@click.argument("audit_dir", type=PATH)
@click.option("--output", "-o", metavar="FILE", help="where to write the page; - for standard output  "
                                                     "[default: AUDIT_DIR/report.html]")
def command(audit_dir: Path, output: str | None) -> int:
    """Write the findings of a `logtool audit` (its AUDIT_DIR/summary.json) as one HTML page: the fleet
    summary, findings by severity, code, host and topic, the worst partitions with their remedies, replica
    divergence, and charts of damaged bytes by host and topic and of when the damage was written. The page
    loads nothing from anywhere: it opens the same offline."""
    source = audit_dir / "summary.json"
    try:
        summary = json.loads(source.read_text(encoding="utf-8"))
    except OSError as e:
        raise Failure(f"{source}: {e.strerror or e} (is {audit_dir} the --output of a logtool audit?)") from None
    except ValueError as e:
        raise Failure(f"{source}: not an audit summary: {e}") from None
    if not isinstance(summary, dict) or "partitions" not in summary:
        raise Failure(f"{source}: not an audit summary (no partitions count)")
    page = html_report(summary)
    if output == "-":
        sys.stdout.write(page)
        return exitcodes.CLEAN
    target = Path(output) if output else audit_dir / "report.html"
    try:
        if classify_path(target.parent) in (PathKind.LOG_DIR, PathKind.PARTITION_DIR):
            raise Failure(f"{target.parent} is a Kafka log dir or partition dir: logtool writes nothing there "
                          f"but its repairs; give -o a path elsewhere")
    except OSError:
        pass  # a directory that cannot be read is not one to write into either: the write below says why
    try:
        # Written beside its name and renamed over it: a reader never sees half a page.
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain open() would have made it
        os.replace(tmp, target)
    except OSError as e:
        raise Failure(f"{target}: {e.strerror or e}") from None
    print(f"wrote {target}", file=sys.stderr)
    return exitcodes.CLEAN
