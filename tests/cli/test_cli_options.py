"""Options that several commands share reach each command's library call as what they mean."""
from __future__ import annotations

import json
import shutil
import signal

import pytest
from click.testing import CliRunner

from logtool.cli import cli, main
from logtool.findings import INDEX_MISSING, NOT_AUDITED, Severity, finding
from logtool.spark.summary import Audited, Tally


@pytest.mark.parametrize("given, meant", [([], Severity.WARNING), (["--fail-on", "warning"], Severity.WARNING),
                                          (["--fail-on", "error"], Severity.ERROR)], ids=["default", "warning", "error"])
def test_audit_passes_fail_on_to_the_job(monkeypatch, tmp_path, given, meant):
    asked = []

    def run_audit(_spark, audit, _started):
        asked.append(audit.fail_on)
        return _summary(Tally(), audit)

    _fake_spark(monkeypatch, run_audit)
    (tmp_path / "data").mkdir()
    result = CliRunner().invoke(cli, ["audit", *given, "-o", str(tmp_path / "out"), str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert asked == [meant]


def _fake_spark(monkeypatch, run_audit) -> None:
    """`logtool audit` with its Spark job replaced by `run_audit` (no JVM)."""
    import logtool.commands.audit as audit_command
    import logtool.spark.driver as driver
    monkeypatch.setattr(audit_command, "require", lambda: None)
    monkeypatch.setattr(audit_command, "start", lambda master, conf: (None, False))
    monkeypatch.setattr(driver, "run_audit", run_audit)
    monkeypatch.setattr("logtool.render.audit.render_audit", lambda summary: None)


def _summary(tally, audit) -> Audited:
    """What run_audit returns for a fleet of `tally`'s counts."""
    return Audited({**tally.summary(audit.fail_on), "verdict": None, "divergence": None, "output": audit.output})


@pytest.mark.parametrize("given, code", [([], 4), (["--fail-on", "error"], 0)], ids=["default", "fail-on-error"])
def test_audit_summary_in_json_lines_and_its_exit_code(monkeypatch, capsys, tmp_path, given, code):
    """The audit's result decides its exit code from --fail-on; JSON Lines give a row per breakdown, then
    the counts; a host whose PATHs were not audited is named on stderr and makes it 8 whatever --fail-on."""
    def run_audit(_spark, audit, _started):
        tally = Tally().count([finding(INDEX_MISSING, "no index", "/d/orders-0/0.index")], host="b1",
                              topic="orders", broker=("c", 1, "b1"))
        return _summary(tally, audit)

    def logtool(*words: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as ended:
            main(["audit", *given, "-o", str(tmp_path / "out"), str(tmp_path / "data"), *words])
        out, err = capsys.readouterr()
        return ended.value.code, out, err

    _fake_spark(monkeypatch, run_audit)
    (tmp_path / "data").mkdir()
    rc, out, _ = logtool("--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == code
    assert [r["type"] for r in rows] == ["code", "broker", "host", "topic", "summary"]
    assert rows[0] | {"type": None} == {"type": None, "code": "LT301", "name": "INDEX_MISSING", "severity": "warning",
                                        "count": 1}
    assert rows[-1]["warnings"] == 1 and rows[-1]["exit_code"] == code and "by_code" not in rows[-1]
    rc, out, _ = logtool("--format", "json")
    assert json.loads(out)["exit_code"] == code == rc

    def lost(_spark, audit, _started):
        tally = Tally().count([finding(NOT_AUDITED, "no executor on b2", "b2:/data")], True, host="b2")
        return _summary(tally, audit)

    _fake_spark(monkeypatch, lost)
    rc, out, err = logtool("--format", "json")
    assert rc == 8 and json.loads(out)["exit_code"] == 8
    assert f"logtool: not audited on b2: 1 PATH(s) or partition(s) (NOT_AUDITED rows in {tmp_path / 'out'}" in err


@pytest.mark.parametrize("command", [["verify"], ["index", "verify"]], ids=" ".join)
def test_fail_on_error_lets_a_warning_pass(command, tmp_path):
    from conftest import ROOT
    part = tmp_path / "orders-0"
    shutil.copytree(ROOT / "fixtures" / "sample-logdir" / "orders-0", part)
    (part / "00000000000000000000.index").unlink()  # INDEX_MISSING: a warning, and the only finding
    warned = CliRunner().invoke(cli, [*command, "--format", "json", str(part)])
    passed = CliRunner().invoke(cli, [*command, "--fail-on", "error", "--format", "json", str(part)])
    assert json.loads(warned.stdout)["exit_code"] == 4
    assert json.loads(passed.stdout)["exit_code"] == 0


def test_a_ctrl_c_that_py4j_made_an_error_of_its_own_is_an_interruption(monkeypatch, capsys, tmp_path):
    """Ctrl-C inside a Py4J call comes out of it as a Py4JError ("Answer from Java side is empty"): the
    audit then says it was interrupted, as for any other Ctrl-C, not that the Spark job failed."""
    import threading

    from py4j.protocol import Py4JError

    from logtool.spark import session

    def failing(_spark, _audit, _started):
        raise Py4JError("An error occurred while calling o42.collect")

    def interrupted(_spark, _audit, _started):
        try:
            session._interrupt(2, None)  # the handler an audit's session installs for SIGINT
        except KeyboardInterrupt:
            raise Py4JError("Answer from Java side is empty") from None

    def logtool() -> tuple[int, str]:
        with pytest.raises(SystemExit) as ended:
            main(["audit", "-o", str(tmp_path / "out"), str(tmp_path / "data")])
        return ended.value.code, capsys.readouterr().err

    (tmp_path / "data").mkdir()
    monkeypatch.setattr(session, "_interrupted", threading.Event())
    _fake_spark(monkeypatch, failing)
    rc, err = logtool()
    assert rc == 8 and err.strip().splitlines()[-1] == "logtool: the Spark job failed: An error occurred while " \
                                                       "calling o42.collect"
    _fake_spark(monkeypatch, interrupted)
    handler = signal.getsignal(signal.SIGINT)
    try:
        rc, err = logtool()
    finally:
        # An interrupted command ignores SIGINT from then on, which every process this one starts would inherit.
        signal.signal(signal.SIGINT, handler)
    assert rc == 8 and err.strip().splitlines()[-1] == "logtool: interrupted (SIGINT)"
