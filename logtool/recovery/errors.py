"""Why a repair or a restore refuses to start or to go on: each is one line for the user and exit 8."""


class RepairRefused(Exception):
    """Nothing (more) is written: a lock is held, a path is a symlink, the quarantine cannot be used."""
