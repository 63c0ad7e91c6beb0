"""How every command's result reaches the user: one JSON document, JSON Lines or text on stdout, a line on
stderr for each thing it could not do, and the exit code the result itself decides.

A command is: its options, one library call that returns a `Result`, then `emit(result, fmt, text)`, whose
return value is the exit code."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from logtool.findings import Severity
from logtool.render.jsonout import emit_json, emit_jsonl, undecoded_escaped


class Result(Protocol):
    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        """fsck's codes (exitcodes.py) for this result; `fail_on` is the least severity that makes it 4,
        where findings decide it."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The whole result as one JSON document (emit adds `exit_code`)."""
        ...

    def rows(self) -> Iterable[dict[str, Any]]:
        """The result as JSON Lines rows, each with its `type`, before the closing summary row."""
        ...

    def summary(self) -> dict[str, Any]:
        """The counts of the closing JSON Lines row (emit adds `type` and `exit_code`)."""
        ...

    def stderr_lines(self) -> list[str]:
        """The lines for stderr: each thing that could not be done (a path unreadable, not planned...), and
        what a repair made leaves to know (its run, the command that undoes it)."""
        ...


R = TypeVar("R", bound=Result)


def emit(result: R, fmt: str, text: Callable[[R], None], fail_on: Severity = Severity.WARNING) -> int:
    """Print `result` in `fmt` (text through `text`); its stderr lines are written even when stdout fails
    (a reader gone, `| head`): a repair made is named whatever happens to its report. Returns the exit code."""
    rc = result.exit_code(fail_on)
    try:
        if fmt == "json":
            emit_json({**result.to_dict(), "exit_code": rc})
        elif fmt == "jsonl":
            emit_jsonl([*result.rows(), {"type": "summary", **result.summary(), "exit_code": rc}])
        else:
            text(result)
    finally:
        for line in result.stderr_lines():
            print(undecoded_escaped(line), file=sys.stderr)
    return rc
