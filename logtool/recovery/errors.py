"""Why a repair or a restore refuses to start or stops: each is one line for the user."""
from logtool import exitcodes


class RepairRefused(Exception):
    """Nothing (more) is written: a lock is held, a path is a symlink, the quarantine cannot be used, the plan
    is stale, the repair would not fit. Exit 8."""


class RepairStopped(Exception):
    """A repair or restore stopped after its first write (an error, or a signal at the end of a step). The
    message names the run and the commands that finish or undo it."""

    def __init__(self, message: str, exit_code: int = exitcodes.OPERATIONAL) -> None:
        super().__init__(message)
        self.exit_code = exit_code
