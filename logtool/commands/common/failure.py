"""How a command says it cannot do its job: one line on stderr, an error object on stdout in the JSON
formats (`cli.main` writes both), and the exit code that names the class of failure."""
from __future__ import annotations

import click

from logtool import exitcodes


class Failure(click.ClickException):
    def __init__(self, message: str, exit_code: int = exitcodes.OPERATIONAL) -> None:
        super().__init__(message)
        # click declares exit_code a ClassVar; each Failure carries its own (cli.main reads it), which
        # Python allows an instance to shadow.
        self.exit_code = exit_code  # type: ignore[misc]
