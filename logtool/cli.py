"""The `logtool` command group: global options and the mapping of errors to fsck exit codes."""
from __future__ import annotations

import os
import sys

import click

from logtool import __version__
from logtool.commands import audit, dump, find, index, restore, scan, truncate, verify
from logtool import exitcodes



class _ReaderGone(Exception):
    """stdout's reader went away during a command."""


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        # click turns a broken pipe inside a command into exit status 1 ("problems repaired" for us), so it
        # is taken out of click's hands here and ends in `main` like one met anywhere else.
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _ReaderGone() from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="logtool")
def cli() -> None:
    """Forensics and repair for Apache Kafka log directories, offline.

    Exit codes follow fsck: 0 clean, 1 problems repaired, 4 problems remain,
    8 operational error, 16 usage error.
    """


cli.add_command(scan.command)
cli.add_command(verify.command)
cli.add_command(find.command)
cli.add_command(index.group)
cli.add_command(restore.command)
cli.add_command(truncate.command)
cli.add_command(audit.command)
cli.add_command(dump.command)


def main(argv: list[str] | None = None) -> None:
    try:
        rc = cli.main(args=argv, prog_name="logtool", standalone_mode=False)
        sys.stdout.flush()  # here rather than at interpreter exit, where a closed pipe cannot be handled
    except click.UsageError as e:
        e.show()
        rc = exitcodes.USAGE
    except click.Abort:
        click.echo("Aborted.", err=True)
        rc = exitcodes.OPERATIONAL
    except click.ClickException as e:
        print(f"logtool: {e.format_message()}", file=sys.stderr)  # one prefix for every error of ours
        rc = exitcodes.OPERATIONAL
    except (BrokenPipeError, _ReaderGone):
        # The reader went away (`logtool dump | head`): leave quietly, as Unix tools do. What stdout still
        # buffers goes to /dev/null, so the flush at interpreter exit cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        rc = exitcodes.CLEAN
    except KeyboardInterrupt:
        print("logtool: interrupted", file=sys.stderr)
        rc = exitcodes.OPERATIONAL
    except Exception as e:  # a bug of ours: one line for the user, the traceback on request
        if os.environ.get("LOGTOOL_DEBUG"):
            raise
        print(f"logtool: internal error: {type(e).__name__}: {e} (set LOGTOOL_DEBUG=1 for the traceback)",
              file=sys.stderr)
        rc = exitcodes.OPERATIONAL
    sys.exit(rc if isinstance(rc, int) else exitcodes.CLEAN)
