"""The session fixtures of the repair tests: a Kafka-written case ready to repair, and its uninterrupted
repair to compare with (a pytest plugin, named in tests/conftest.py)."""
from __future__ import annotations

import pytest

from support.repairs import EXIT_REPAIRED, FIRST, Spec, apply, build_first, fixture_spec, fresh, tree


@pytest.fixture(scope="session")
def spec(tmp_path_factory):
    made: dict[str, Spec] = {}

    def get(case: str) -> Spec:
        if case not in made:
            made[case] = build_first(tmp_path_factory.mktemp("first")) if case == FIRST else fixture_spec(case)
        return made[case]

    return get


@pytest.fixture(scope="session")
def reference(spec, tmp_path_factory):
    """Each case's partition dir after one uninterrupted `truncate --apply`: name -> sha256."""
    done: dict[str, dict[str, str]] = {}

    def get(case: str) -> dict[str, str]:
        if case not in done:
            root = tmp_path_factory.mktemp("reference")
            pdir = fresh(spec(case), root)
            r = apply(pdir, root / "q")
            assert r.returncode == EXIT_REPAIRED, r.stderr
            done[case] = tree(pdir)
        return done[case]

    return get
