"""The `logtool` command group: global options and the mapping of errors to fsck exit codes."""
from __future__ import annotations

import json
import os
import pkgutil
import signal
import sys
import threading

from importlib import import_module

import click

from logtool import __version__
from logtool import commands, exitcodes
from logtool.commands.common.failure import Failure
from logtool.commands.common.options import epilog
from logtool.render.jsonout import versioned


class _ReaderGone(Exception):
    """stdout's reader went away during a command."""


class _Terminated(BaseException):
    """SIGTERM arrived (a BaseException, like KeyboardInterrupt, so that no `except Exception` swallows it)."""


# Every module of logtool.commands is a command of its name, holding a click command (`command`) or group
# (`group`); what commands share lives in its `common` package. Each module is imported only when its command
# is asked for: starting one command does not pay for importing every other's dependencies (a dump needs no
# repair planner, a scan no decoders).
_COMMAND_MODULES = sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.ispkg)


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return _COMMAND_MODULES

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in _COMMAND_MODULES:
            return None
        module = import_module(f"logtool.commands.{name}")
        found: click.Command = getattr(module, "command", None) or module.group
        return found

    def invoke(self, ctx: click.Context):
        # click turns a broken pipe inside a command into exit status 1 ("problems repaired" for us), so it
        # is taken out of click's hands here and ends in `main` like one met anywhere else.
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _ReaderGone() from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]}, epilog=epilog([
    ("logtool scan /var/lib/kafka/data", "what is there, and which partitions are damaged"),
    ("logtool verify /var/lib/kafka/data",
     "every finding, with where it is; `logtool verify --explain CODE` says more"),
    ("logtool truncate /var/lib/kafka/data", "the repair Kafka's recovery would make, as a plan (--apply makes it)"),
]))
@click.version_option(__version__, prog_name="logtool")
def cli() -> None:
    """Forensics and repair for Apache Kafka log directories, offline: which partitions are damaged,
    exactly where, what can still be read, and how to put the directory back in a state the broker
    loads. Nothing is written into a log dir but by truncate, index rebuild and restore, and every byte
    they replace is kept in a quarantine. `logtool COMMAND --help` for each command."""



def _machine_format(argv: list[str]) -> str | None:
    """The JSON format the command line asks for, if any: errors then also go to stdout as an object, so
    that a script reading stdout always learns why there is nothing else. Read from the words themselves,
    as the error may come before click has parsed the option."""
    for i, word in enumerate(argv):
        value = word.partition("=")[2] if word.startswith("--format=") else \
            argv[i + 1] if word == "--format" and i + 1 < len(argv) else None
        if value in ("json", "jsonl"):
            return value
    return None


def _error_object(error: str, message: str, rc: int) -> None:
    """The one error object of the JSON formats (a document of its own in json, the last line in jsonl)."""
    sys.stdout.write(json.dumps(versioned({"type": "error", "error": error, "message": message, "exit_code": rc}))
                     + "\n")


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated()


def _interrupted() -> tuple[int, tuple[str, str]]:
    """Say the command was interrupted. It has cleaned up on its way here: a second Ctrl-C (or the same one,
    sent to the whole process group) would only break the exit with a traceback from some object's __del__."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("logtool: interrupted (SIGINT)", file=sys.stderr)
    return exitcodes.OPERATIONAL, ("operational", "interrupted")


def main(argv: list[str] | None = None) -> None:
    words = sys.argv[1:] if argv is None else argv
    # SIGTERM ends a command as Ctrl-C does, with its line (a repair defers both to the end of a step).
    if threading.current_thread() is threading.main_thread():  # only the main thread may set a handler
        signal.signal(signal.SIGTERM, _terminate)
    failed: tuple[str, str] | None = None  # (class, message) of an error that ended the command
    try:
        rc = cli.main(args=argv, prog_name="logtool", standalone_mode=False)
        sys.stdout.flush()  # here rather than at interpreter exit, where a closed pipe cannot be handled
    except click.UsageError as e:
        if e.ctx is not None:  # click's usage lines, then the error with the prefix every error of ours has
            print(f"{e.ctx.get_usage()}\nTry '{e.ctx.command_path} --help' for help.\n", file=sys.stderr)
        print(f"logtool: {e.format_message()}", file=sys.stderr)
        rc, failed = exitcodes.USAGE, ("usage", e.format_message())
    except (click.Abort, KeyboardInterrupt):  # click turns a Ctrl-C inside a command into Abort
        rc, failed = _interrupted()
    except _Terminated:
        print("logtool: terminated (SIGTERM)", file=sys.stderr)
        rc, failed = 128 + signal.SIGTERM, ("operational", "terminated")
    except click.ClickException as e:
        print(f"logtool: {e.format_message()}", file=sys.stderr)  # one prefix for every error of ours
        rc = e.exit_code if isinstance(e, Failure) else exitcodes.OPERATIONAL
        failed = ("problems" if rc == exitcodes.PROBLEMS else "operational", e.format_message())
    except (BrokenPipeError, _ReaderGone):
        # The reader went away (`logtool dump | head`): leave quietly, as Unix tools do. What stdout still
        # buffers goes to /dev/null, so the flush at interpreter exit cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        rc = exitcodes.CLEAN
    except Exception as e:  # a bug of ours: one line for the user, the traceback on request
        if os.environ.get("LOGTOOL_DEBUG"):
            raise
        message = f"internal error: {type(e).__name__}: {e}"
        print(f"logtool: {message} (set LOGTOOL_DEBUG=1 for the traceback)", file=sys.stderr)
        rc, failed = exitcodes.OPERATIONAL, ("internal", message)
    if failed is not None and _machine_format(words):
        try:
            _error_object(*failed, rc)
            sys.stdout.flush()
        except BrokenPipeError:
            pass
    sys.exit(rc if isinstance(rc, int) else exitcodes.CLEAN)
