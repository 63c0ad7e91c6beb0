"""Options that several commands share reach each command's library call as what they mean."""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from logtool.cli import cli
from logtool.findings import Severity


@pytest.mark.parametrize("given, meant", [([], Severity.WARNING), (["--fail-on", "warning"], Severity.WARNING),
                                          (["--fail-on", "error"], Severity.ERROR)])
def test_audit_passes_fail_on_to_the_job(monkeypatch, tmp_path, given, meant):
    import logtool.commands.audit as audit_command
    import logtool.spark.driver as driver
    asked = []

    def run_audit(_spark, audit, _started):
        asked.append(audit.fail_on)
        return {"exit_code": 0, "not_audited": []}

    monkeypatch.setattr(audit_command, "require", lambda: None)
    monkeypatch.setattr(audit_command, "start", lambda master, conf: (None, False))
    monkeypatch.setattr(driver, "run_audit", run_audit)
    monkeypatch.setattr("logtool.render.audit.render_audit", lambda summary: None)
    (tmp_path / "data").mkdir()
    result = CliRunner().invoke(cli, ["audit", *given, "-o", str(tmp_path / "out"), str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert asked == [meant]


@pytest.mark.parametrize("command", [["verify"], ["index", "verify"]])
def test_fail_on_error_lets_a_warning_pass(command, tmp_path):
    from conftest import ROOT
    part = tmp_path / "orders-0"
    shutil.copytree(ROOT / "fixtures" / "sample-logdir" / "orders-0", part)
    (part / "00000000000000000000.index").unlink()  # INDEX_MISSING: a warning, and the only finding
    warned = CliRunner().invoke(cli, [*command, "--format", "json", str(part)])
    passed = CliRunner().invoke(cli, [*command, "--fail-on", "error", "--format", "json", str(part)])
    assert json.loads(warned.stdout)["exit_code"] == 4
    assert json.loads(passed.stdout)["exit_code"] == 0
