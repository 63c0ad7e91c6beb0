"""`verify` holds each KRaft log dir against its own metadata log (logtool/checks/logdir_metadata.py): partition
dirs the metadata does not assign to the node, assigned partitions with no dir, partition.metadata topic ids that
are not the metadata's, a node id or directory.id the metadata does not know, replicas it places in another
directory, and the records the replay cannot apply.

Held against what we did not compute ourselves:
- the real KRaft log dirs (brokers' own disks, their own metadata logs): the exact findings of each, none where
  the disk and the metadata agree, and each of the few real disagreements named with its cause;
- copies of real log dirs edited as an operator's mistakes would leave them (a partition dir from another
  cluster, a removed dir, a changed topic id, node id or directory.id, a metadata log cut short), each through
  the installed `logtool verify --format json`, with its exit code;
- metadata logs built record by record with the schema engine (`fixtures.metadata`) for what the real logs
  never hold (JBOD directories, a controller's log dir, records Kafka's loader refuses).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import SHARED, require, run_logtool

from fixtures.metadata import metadata_value, uuid_text, write_metadata_log
from logtool.checks.logdir import check_log_dir
from logtool.checks.logdir_metadata import REPLAY_PROBLEMS_SHOWN
from logtool.findings import (
    ASSIGNED_PARTITION_MISSING,
    DIRECTORY_NOT_REGISTERED,
    METADATA_LOG_GAP,
    METADATA_RECORD_REFUSED,
    NODE_NOT_REGISTERED,
    PARTITION_NOT_ASSIGNED,
    REPLICA_DIRECTORY_MISMATCH,
    TOPIC_ID_MISMATCH,
    Group,
)
from logtool.rules.metadata.compare import history_of
from logtool.rules.metadata.replay import open_source
from logtool.store.segment import Segment

REAL_ROOTS = [SHARED / "real", SHARED / "real-more"]
SEGMENT = "00000000000000000000.log"


def kraft_log_dirs() -> list[Path]:
    found = sorted(p.parent for root in REAL_ROOTS for p in require(root).rglob("__cluster_metadata-0") if p.is_dir())
    assert len(found) >= 20, found
    return found


def _id(log_dir: Path) -> str:
    return str(log_dir.relative_to(SHARED))


# The real log dirs whose disk and metadata disagree, and how: (kind, file, words of the message). The Kafka
# Connect config partitions were taken out of the fixture sets (their SOURCES.md: they held Connect's session
# keys), and __consumer_offsets-14 is missing from kraft-broker-logdir as published (github.com/Niloufar1171/LDI-POC;
# the checkpoints list it at offset 0: it was empty, and the broker would create it empty again). codecrafters-a
# (a hand-made sample of the "build your own Kafka" course) starts its metadata log at offset 1.
REAL_DISAGREEMENTS = {
    "real/kraft-broker-logdir": {
        (ASSIGNED_PARTITION_MISSING.name, "__consumer_offsets-14",
         "up to offset 4928 assigns it to node 1 and to this log dir's directory.id"),
    },
    "real/ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data": {
        (ASSIGNED_PARTITION_MISSING.name, "docker-connect-configs-0",
         "recovery-point-offset-checkpoint at 10, replication-offset-checkpoint at 10"),
    },
    "real-more/Danielowo2000__BigDataTechnologies-Version-2/kafka_data": {
        (ASSIGNED_PARTITION_MISSING.name, "_kafka-connect-configs-0",
         "the metadata records no log dirs of the broker"),
    },
    "real/codecrafters-a": {
        (METADATA_LOG_GAP.name, f"__cluster_metadata-0/{SEGMENT}", "offsets 0 to 0 are missing in the log"),
    },
}


def verify(*paths: Path) -> tuple[int, dict]:
    res = run_logtool("verify", "--format", "json", *map(str, paths))
    assert "Traceback" not in res.stderr, res.stderr
    return res.returncode, json.loads(res.stdout)


def metadata_findings(doc: dict) -> list[dict]:
    return [f for d in doc["log_dirs"] for f in d["findings"] if f["code"].startswith("LT7")]


def keyed(doc: dict) -> set[tuple[str, str]]:
    return {(f["name"], f["file"]) for f in metadata_findings(doc)}


def the(doc: dict, name: str, file: str) -> dict:
    found = [f for f in metadata_findings(doc) if f["name"] == name and f["file"] == file]
    assert len(found) == 1, metadata_findings(doc)
    return found[0]


def copy_of(tmp_path: Path, log_dir: Path, name: str = "broker") -> Path:
    """A writable copy of a real log dir (the shared fixtures are read-only)."""
    dest = tmp_path / name
    shutil.copytree(require(log_dir), dest, copy_function=shutil.copyfile, symlinks=True)
    for root, dirs, _files in os.walk(dest):
        for d in dirs:
            os.chmod(Path(root) / d, 0o755)
    os.chmod(dest, 0o755)
    return dest


# Real log dirs that verify clean (exit 0, held below): an edit of a copy is what makes it exit 4.
SINGLE = SHARED / "real/13LAckHEart__kafka/data/kafka"  # one broker, one topic, metadata.version before directories
WITH_DIRECTORIES = SHARED / "real-more/checongbinh20011990__mirco_book_shop/data"  # directories recorded (KIP-858)
THREE_BROKERS = SHARED / "real-more/greenlemonT__kafka-temp/data/kafka1"  # node 1 of three
OTHER_CLUSTER = SHARED / "real-more/greenlemonT__kafka-temp/data/kafka/payment-create-request-0"


def _properties(text: str, **changes: str) -> str:
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={changes[key.replace('.', '_')]}" if key.replace(".", "_") in changes else line)
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------- the real log dirs


@pytest.mark.sample(8)
@pytest.mark.parametrize("log_dir", kraft_log_dirs(), ids=_id)
def test_every_real_kraft_log_dir_is_held_against_its_metadata(log_dir):
    rc, doc = verify(log_dir)
    expected = REAL_DISAGREEMENTS.get(_id(log_dir), set())
    assert keyed(doc) == {(name, file) for name, file, _ in expected}
    for name, file, words in expected:
        assert words in the(doc, name, file)["message"]
    if log_dir in (SINGLE, WITH_DIRECTORIES, THREE_BROKERS):
        assert rc == 0  # the bases of the scenarios below: their edits are what makes verify exit 4


# ------------------------------------------------------------------------------------------- edited copies


def test_a_partition_dir_copied_in_from_another_cluster_is_not_assigned(tmp_path):
    broker = copy_of(tmp_path, SINGLE)
    shutil.copytree(require(OTHER_CLUSTER), broker / OTHER_CLUSTER.name, copy_function=shutil.copyfile)
    rc, doc = verify(broker)
    assert rc == 4 and keyed(doc) == {(PARTITION_NOT_ASSIGNED.name, "payment-create-request-0")}
    f = the(doc, PARTITION_NOT_ASSIGNED.name, "payment-create-request-0")
    assert f["code"] == "LT701" and f["severity"] == "warning"
    assert "has no topic 'payment-create-request'" in f["message"] and "up to offset 1357" in f["message"]
    assert "logtool metadata --history payment-create-request-0" in f["message"]
    text = run_logtool("verify", str(broker)).stdout  # and so an operator reads it
    assert "LT701 PARTITION_NOT_ASSIGNED" in text and "payment-create-request-0" in text


def test_a_removed_partition_dir_is_missing(tmp_path):
    broker = copy_of(tmp_path, WITH_DIRECTORIES)
    shutil.rmtree(broker / "email-0")
    rc, doc = verify(broker)
    assert rc == 4 and keyed(doc) == {(ASSIGNED_PARTITION_MISSING.name, "email-0")}
    f = the(doc, ASSIGNED_PARTITION_MISSING.name, "email-0")
    assert f["code"] == "LT702" and "assigns it to node 1 and to this log dir's directory.id" in f["message"]
    assert "the offset checkpoints still list it (recovery-point-offset-checkpoint at" in f["message"]
    assert "the broker would create it empty" in f["message"]


def test_a_removed_partition_dir_is_missing_where_the_metadata_records_no_directories(tmp_path):
    broker = copy_of(tmp_path, SINGLE)
    shutil.rmtree(broker / "test-topic-0")
    rc, doc = verify(broker)
    f = the(doc, ASSIGNED_PARTITION_MISSING.name, "test-topic-0")
    assert rc == 4 and "the metadata records no log dirs of the broker" in f["message"]


def test_a_changed_topic_id_is_another_topic_s_directory(tmp_path):
    broker = copy_of(tmp_path, SINGLE)
    meta = broker / "test-topic-0" / "partition.metadata"
    old = meta.read_text().split("topic_id:")[1].strip()
    new = uuid_text(12345)
    meta.write_text(f"version: 0\ntopic_id: {new}\n")
    rc, doc = verify(broker)
    assert rc == 4 and keyed(doc) == {(TOPIC_ID_MISMATCH.name, "test-topic-0/partition.metadata")}
    message = the(doc, TOPIC_ID_MISMATCH.name, "test-topic-0/partition.metadata")["message"]
    assert f"partition.metadata names topic id {new}" in message and f"the id {old}" in message
    assert "creates the partition anew, empty" in message


def test_a_node_id_the_metadata_does_not_know_is_one_finding(tmp_path):
    broker = copy_of(tmp_path, SINGLE)
    props = broker / "meta.properties"
    props.write_text(_properties(props.read_text(), node_id="7"))
    rc, doc = verify(broker)
    assert rc == 4 and keyed(doc) == {(NODE_NOT_REGISTERED.name, "meta.properties")}  # no stray dir one by one
    message = the(doc, NODE_NOT_REGISTERED.name, "meta.properties")["message"]
    assert "names node 7" in message and "registers broker(s) 1" in message and "the 1 partition dir(s)" in message


def test_a_node_id_of_another_broker_makes_its_partitions_stray_and_the_other_s_missing(tmp_path):
    broker = copy_of(tmp_path, THREE_BROKERS)
    props = broker / "meta.properties"
    props.write_text(_properties(props.read_text(), node_id="2"))
    rc, doc = verify(broker)
    assert rc == 4 and keyed(doc) == {
        (PARTITION_NOT_ASSIGNED.name, "delivery-create-request-0"),
        (PARTITION_NOT_ASSIGNED.name, "payment-create-response-0"),
        (ASSIGNED_PARTITION_MISSING.name, "payment-failed-0"),  # node 2's; __consumer_offsets is on all three
    }
    stray = the(doc, PARTITION_NOT_ASSIGNED.name, "delivery-create-request-0")["message"]
    assert "assigns its replicas to node(s) 1, not to node 2" in stray


def test_a_metadata_log_cut_before_a_topic_was_created_makes_its_dir_stray(tmp_path):
    broker = copy_of(tmp_path, SINGLE)
    created = history_of(open_source(broker), "test-topic").entries[0]
    assert created["record"] == "TOPIC_RECORD"
    log = broker / "__cluster_metadata-0" / SEGMENT
    with Segment(log, 0) as seg:
        cut = next(v for v in seg.walk() if v.base_offset <= created["offset"] <= v.last_offset)
    with open(log, "r+b") as f:
        f.truncate(cut.position)
    rc, doc = verify(broker)
    assert rc == 4 and keyed(doc) == {(PARTITION_NOT_ASSIGNED.name, "test-topic-0")}
    message = the(doc, PARTITION_NOT_ASSIGNED.name, "test-topic-0")["message"]
    assert f"the metadata up to offset {cut.base_offset - 1} has no topic 'test-topic'" in message
    # What the operator asks next: the cut log never saw the topic; the whole one says which record made it.
    assert "0 record(s)" in run_logtool("metadata", str(broker), "--history", "test-topic-0").stdout
    whole = run_logtool("metadata", str(SINGLE), "--history", "test-topic-0").stdout
    assert f"{created['offset']} " in whole and "TOPIC_RECORD: topic created" in whole


def test_a_directory_id_the_broker_did_not_register_is_one_finding(tmp_path):
    broker = copy_of(tmp_path, WITH_DIRECTORIES)
    props = broker / "meta.properties"
    old = next(line.split("=", 1)[1] for line in props.read_text().splitlines() if line.startswith("directory.id="))
    props.write_text(_properties(props.read_text(), directory_id=uuid_text(2**100 + 7)))
    rc, doc = verify(broker)
    assert rc == 4 and keyed(doc) == {(DIRECTORY_NOT_REGISTERED.name, "meta.properties")}
    message = the(doc, DIRECTORY_NOT_REGISTERED.name, "meta.properties")["message"]
    assert f"not among the log dirs broker 1 registered ({old}" in message


# ------------------------------------------------------------------------------------------- built metadata logs

CLUSTER = "q1w2e3r4t5y6u7i8o9p0ab"
DIR_A, DIR_B = uuid_text(2**90 + 1), uuid_text(2**90 + 2)
ORDERS = uuid_text(2**80 + 5)


def _broker(broker_id: int, dirs: list[str]) -> bytes:
    return metadata_value("RegisterBrokerRecord", {
        "brokerId": broker_id, "incarnationId": uuid_text(2**70 + broker_id), "brokerEpoch": 10, "rack": None,
        "endPoints": [{"name": "PLAINTEXT", "host": f"b{broker_id}", "port": 9092, "securityProtocol": 0}],
        "features": [], "fenced": False, "logDirs": dirs})


def _partition(number: int, replicas: list[int], directories: list[str]) -> bytes:
    return metadata_value("PartitionRecord", {
        "partitionId": number, "topicId": ORDERS, "replicas": replicas, "isr": replicas, "removingReplicas": [],
        "addingReplicas": [], "leader": replicas[0], "leaderEpoch": 0, "partitionEpoch": 0,
        "directories": directories})


def _log_dir(root: Path, node: int, directory: str, batches: list[list[bytes]], partitions: list[str]) -> Path:
    root.mkdir()
    (root / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id={CLUSTER}\n"
                                          f"directory.id={directory}\n")
    write_metadata_log(root, batches)
    for name in partitions:
        (root / name).mkdir()
        (root / name / SEGMENT).write_bytes(b"")
        (root / name / "partition.metadata").write_text(f"version: 0\ntopic_id: {ORDERS}\n")
    return root


def _features() -> list[bytes]:
    return [metadata_value("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 19})]


def test_jbod_directories_are_held_replica_by_replica(tmp_path):
    batches = [_features(), [_broker(1, [DIR_A, DIR_B])],
               [metadata_value("TopicRecord", {"name": "orders", "topicId": ORDERS}),
                _partition(0, [1], [DIR_B]),  # in the broker's other log dir, yet here
                _partition(1, [1], [DIR_A]),  # here, where it belongs
                _partition(2, [1], [DIR_A]),  # belongs here, and is not
                _partition(3, [1], [DIR_B]),  # in the other log dir: not this one's to hold
                _partition(4, [1], [uuid_text(0)])]]  # MIGRATING, and the broker has two log dirs: either
    log_dir = _log_dir(tmp_path / "a", 1, DIR_A, batches, ["orders-0", "orders-1"])
    rc, doc = verify(log_dir)
    assert rc == 4 and keyed(doc) == {(REPLICA_DIRECTORY_MISMATCH.name, "orders-0"),
                                      (ASSIGNED_PARTITION_MISSING.name, "orders-2")}
    message = the(doc, REPLICA_DIRECTORY_MISMATCH.name, "orders-0")["message"]
    assert f"in directory {DIR_B}, another log dir of broker 1, not in this log dir ({DIR_A})" in message


def test_a_controller_s_log_dir_is_not_held_and_partitions_there_are_one_finding(tmp_path):
    batches = [_features(), [_broker(1, [DIR_A])],
               [metadata_value("RegisterControllerRecord", {
                   "controllerId": 3000, "incarnationId": uuid_text(2**60), "zkMigrationReady": False,
                   "endPoints": [{"name": "CONTROLLER", "host": "c", "port": 9093, "securityProtocol": 0}],
                   "features": []})],
               [metadata_value("TopicRecord", {"name": "orders", "topicId": ORDERS}), _partition(0, [1], [DIR_A])]]
    controller = _log_dir(tmp_path / "c", 3000, DIR_B, batches, [])
    assert [f for f in check_log_dir(controller).findings if f.kind.group is Group.METADATA] == []
    (controller / "orders-0").mkdir()
    found = [f for f in check_log_dir(controller).findings if f.kind.group is Group.METADATA]
    assert [(f.name, f.file) for f in found] == [(NODE_NOT_REGISTERED.name, "meta.properties")]
    assert "node 3000 is a controller of this cluster" in found[0].message


def test_records_the_loader_refuses_are_findings_capped_per_kind(tmp_path):
    unknown = uuid_text(2**80 + 99)
    refused = [metadata_value("PartitionChangeRecord", {"partitionId": 0, "topicId": unknown, "leader": 1}, 0)
               for _ in range(REPLAY_PROBLEMS_SHOWN + 5)]
    batches = [_features(), [_broker(1, [DIR_A])],
               [metadata_value("TopicRecord", {"name": "orders", "topicId": ORDERS}), _partition(0, [1], [DIR_A])],
               refused]
    log_dir = _log_dir(tmp_path / "a", 1, DIR_A, batches, ["orders-0"])
    rc, doc = verify(log_dir)
    found = [f for f in metadata_findings(doc) if f["name"] == METADATA_RECORD_REFUSED.name]
    assert rc == 4 and len(found) == REPLAY_PROBLEMS_SHOWN + 1 and keyed(doc) == {
        (METADATA_RECORD_REFUSED.name, f"__cluster_metadata-0/{SEGMENT}")}
    assert found[0]["code"] == "LT707" and found[0]["severity"] == "error" and found[0]["offset"] == 4
    assert f"Unable to find partition {unknown}:0" in found[0]["message"]
    assert found[-1]["message"] == "... and 5 more findings like the above"


# ------------------------------------------------------------------------------------------- the Spark audit


@pytest.fixture(scope="module")
def spark():
    from logtool.spark.session import start

    session, _ = start("local[1]", {"spark.ui.enabled": "false"})
    yield session
    session.stop()


def test_the_audit_reports_what_verify_reports(spark, tmp_path):
    # The audit's listing runs the same log-dir checks on the host: the finding is a row of its findings table.
    from logtool.spark.driver import Audit, run_audit

    broker = copy_of(tmp_path, SINGLE)
    shutil.copytree(require(OTHER_CLUSTER), broker / OTHER_CLUSTER.name, copy_function=shutil.copyfile)
    _rc, doc = verify(broker)
    want = the(doc, PARTITION_NOT_ASSIGNED.name, "payment-create-request-0")
    summary = run_audit(spark, Audit((str(broker),), str(tmp_path / "out"))).to_dict()
    rows = spark.read.parquet(str(tmp_path / "out" / "findings")).filter("code LIKE 'LT7%'").collect()
    assert [(r.scope, r.path, r.code, r.name, r.file, r.message) for r in rows] == [
        ("log_dir", str(broker), "LT701", PARTITION_NOT_ASSIGNED.name, "payment-create-request-0", want["message"])]
    assert summary["exit_code"] == 4
