"""The exit codes of every command, as fsck's: scripts and the Spark job rely on them."""
from __future__ import annotations

CLEAN = 0  # nothing wrong, or nothing worse than --fail-on asks about
REPAIRED = 1  # problems were found and corrected
PROBLEMS = 4  # problems remain
OPERATIONAL = 8  # something could not be done at all: an unreadable path, a locked log dir, a failed write
USAGE = 16  # the command line is wrong
