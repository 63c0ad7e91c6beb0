"""`dump --decoder`: the records of __consumer_offsets, __transaction_state and __cluster_metadata decoded by
Kafka's schemas, as kafka-dump-log's --offsets-decoder, --transaction-log-decoder and
--cluster-metadata-decoder print them; the schema engine and Jackson's JSON; the real brokers' logs."""
from __future__ import annotations

import base64
import json
import random
import struct
import uuid

import pytest
from conftest import require
from support.dumping import dump, objects
from support.offsets import (
    REAL_DIRS,
    TS,
    _mutated,
    compact,
    kafka_parse,
    metadata_logs,
    offset_key,
    offset_value_v3,
    partition_of,
    record_lines,
    s16,
    snapshots,
    topic_record,
)

from logtool.format.messages import jackson, java_double, parse
from logtool.reads.internal_topics import BY_NAME, ClusterMetadata, Offsets, TransactionLog, for_path

# ------------------------------------------------------------------------------------ __consumer_offsets

def test_offset_commits_tombstones_and_unknown_types_as_kafka_prints_them(tmp_path):
    part = partition_of(tmp_path, "__consumer_offsets", [
        (offset_key("grp", "orders", 3), offset_value_v3(42, 7, "m\n\x01é", TS)),
        (offset_key("grp", "orders", 3), None),
        (struct.pack(">h", 99) + b"whatever", b"\x00\x00"),
        (offset_key("grp", "orders", 3), struct.pack(">hq", 3, 42)),  # cut short after the offset
        (offset_key("g", "t", 0, record_type=0), struct.pack(">hq", 0, 5) + s16("") + struct.pack(">q", TS)),
    ])
    rc, out, _err = dump(part, "--decoder", "offsets")
    assert rc == 0
    tails = [line.split(" headerKeys: [] ", 1)[1] for line in record_lines(out)]
    assert tails == [
        'key: {"type":"1","data":{"group":"grp","topic":"orders","partition":3}} payload: {"version":"3","data":'
        f'{{"offset":42,"leaderEpoch":7,"metadata":"m\\n\\u0001é","commitTimestamp":{TS}}}}}',
        'key: {"type":"1","data":{"group":"grp","topic":"orders","partition":3}} payload: <DELETE>',
        "key: Unknown record type 99 at offset 2, skipping.",
        "key: Error at offset 3, skipping. Could not read record with version 3 from value's buffer due to: null.",
        'key: {"type":"0","data":{"group":"g","topic":"t","partition":0}} payload: {"version":"0","data":'
        f'{{"offset":5,"metadata":"","commitTimestamp":{TS}}}}}',
    ]


def test_a_consumer_groups_members_have_their_subscription_and_assignment_decoded(tmp_path):
    subscription = struct.pack(">hi", 0, 1) + s16("orders") + struct.pack(">i", -1)
    assignment = struct.pack(">hi", 0, 1) + s16("orders") + struct.pack(">iii", 2, 0, 1) + struct.pack(">i", -1)
    member = (s16("m1") + s16(None) + s16("c") + s16("/h") + struct.pack(">ii", 300000, 10000)
              + struct.pack(">i", len(subscription)) + subscription + struct.pack(">i", len(assignment)) + assignment)
    value = struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 5) + s16("range") + s16("m1") \
        + struct.pack(">qi", -1, 1) + member
    other = value.replace(s16("consumer"), s16("connect"))
    part = partition_of(tmp_path, "__consumer_offsets", [(struct.pack(">h", 2) + s16("grp"), value),
                                                        (struct.pack(">h", 2) + s16("grp"), other)])
    rc, out, _err = dump(part, "--decoder", "offsets")
    payloads = [json.loads(line.split(" payload: ", 1)[1]) for line in record_lines(out)]
    assert payloads[0] == {"version": "3", "data": {
        "protocolType": "consumer", "generation": 5, "protocol": "range", "leader": "m1", "currentStateTimestamp": -1,
        "members": [{"memberId": "m1", "groupInstanceId": None, "clientId": "c", "clientHost": "/h",
                     "rebalanceTimeout": 300000, "sessionTimeout": 10000,
                     "subscription": {"topics": ["orders"], "userData": None},
                     "assignment": {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}],
                                    "userData": None}}]}}
    # Another protocol's bytes are Kafka's base64, as its BinaryNode prints them.
    assert payloads[1]["data"]["members"][0]["subscription"] == base64.b64encode(subscription).decode()


def test_json_embeds_the_same_objects_and_keeps_what_cannot_be_decoded(tmp_path):
    part = partition_of(tmp_path, "__consumer_offsets", [
        (offset_key("grp", "orders", 3), offset_value_v3(42, 7, "", TS)),
        (struct.pack(">h", 99) + b"x", b"yz"),
        (offset_key("grp", "orders", 3), None)])
    rc, out, _err = dump(part, "--format", "jsonl")  # auto: by the topic's name
    rows = [o for o in objects(out) if o["type"] == "record"]
    assert rows[0]["key"] == {"type": "1", "data": {"group": "grp", "topic": "orders", "partition": 3}}
    assert rows[0]["value"] == {"version": "3", "data": {"offset": 42, "leaderEpoch": 7, "metadata": "",
                                                         "commitTimestamp": TS}}
    assert [r["schema"] for r in rows] == ["OffsetCommit", None, "OffsetCommit"]
    assert rows[1]["key"] == {"error": "Unknown record type 99 at offset 1, skipping.",
                              "base64": base64.b64encode(struct.pack(">h", 99) + b"x").decode()}
    assert rows[1]["value"] == {"base64": base64.b64encode(b"yz").decode()}
    assert rows[2]["value"] is None
    # --decoder plain gives the bytes as the key and value decoders show them
    _rc, plain, _err = dump(part, "--format", "jsonl", "--decoder", "plain", "--value-decoder", "hex")
    assert [o for o in objects(plain) if o["type"] == "record"][1]["value"] == "797a"


def test_text_stays_kafka_dump_logs_plain_output_unless_a_decoder_is_asked_for(tmp_path):
    part = partition_of(tmp_path, "__consumer_offsets", [(offset_key("grp", "t", 0), offset_value_v3(1, 0, "", TS))])
    _rc, plain, _err = dump(part, "--print-data")
    assert '"type"' not in plain and "key: \x00\x01\x00\x03grp" in plain
    _rc, decoded, _err = dump(part, "--decoder", "auto")  # a decoder implies the data, as Kafka's flags do
    assert 'key: {"type":"1"' in decoded


def test_decoder_and_key_decoders_are_one_or_the_other(tmp_path):
    part = partition_of(tmp_path, "__consumer_offsets", [(offset_key("g", "t", 0), None)])
    from click import UsageError
    with pytest.raises(UsageError, match="--decoder offsets decodes keys and values itself"):
        dump(part, "--decoder", "offsets", "--key-decoder", "hex")


# ------------------------------------------------------------------------------------ __transaction_state

def test_transaction_state_values_as_kafka_prints_them(tmp_path):
    key = struct.pack(">h", 0) + s16("tx-1")
    v0 = struct.pack(">hqhib", 0, 4001, 2, 60000, 1) + struct.pack(">i", 1) + s16("payments") \
        + struct.pack(">ii", 1, 3) + struct.pack(">qq", TS, TS - 5)
    # v1 is flexible: compact strings and arrays, tagged fields (previous producer id, tag 0)
    v1 = struct.pack(">hqhib", 1, 4001, 3, 60000, 4) + bytes([1]) + struct.pack(">qq", TS, -1) \
        + bytes([1, 0, 8]) + struct.pack(">q", 4000)
    part = partition_of(tmp_path, "__transaction_state", [(key, v0), (key, v1)])
    _rc, out, _err = dump(part, "--decoder", "transaction-log")
    tails = [line.split(" headerKeys: [] ", 1)[1] for line in record_lines(out)]
    assert tails == [
        'key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: {"version":"0","data":{"producerId":4001,'
        '"producerEpoch":2,"transactionTimeoutMs":60000,"transactionStatus":1,"transactionPartitions":[{"topic":'
        f'"payments","partitionIds":[3]}}],"transactionLastUpdateTimestampMs":{TS},"transactionStartTimestampMs":'
        f'{TS - 5}}}}}',
        # Kafka's field order: the tagged previous producer id right after the producer id it preceded
        'key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: {"version":"1","data":{"producerId":4001,'
        '"previousProducerId":4000,"producerEpoch":3,"transactionTimeoutMs":60000,"transactionStatus":4,'
        f'"transactionPartitions":[],"transactionLastUpdateTimestampMs":{TS},"transactionStartTimestampMs":-1}}}}',
    ]


# ------------------------------------------------------------------------------------ __cluster_metadata


def test_metadata_records_and_kafkas_words_for_what_does_not_decode(tmp_path):
    tid = uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF).bytes
    part = partition_of(tmp_path, "__cluster_metadata", [
        (None, topic_record("orders", tid)),
        (None, bytes([0, 2, 0])),
        (None, bytes([1, 99, 0])),
        (None, topic_record("orders", tid) + b"\x00\x00"),
        (None, bytes([1, 2, 0, 9]) + b"or"),
    ])
    _rc, out, _err = dump(part, "--decoder", "cluster-metadata")
    payloads = [line.split(" payload: ", 1)[1] for line in record_lines(out)]
    b64 = base64.urlsafe_b64encode(tid).rstrip(b"=").decode()
    assert payloads == [
        f'{{"type":"TOPIC_RECORD","version":0,"data":{{"name":"orders","topicId":"{b64}"}}}}',
        "Error at 1, skipping. Could not deserialize metadata record with frame version 0. Note that upgrades from "
        "the preview release of KRaft in 2.8 to newer versions are not supported.",
        "Error at 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 99",
        "Error at 3, skipping. Found 2 byte(s) of garbage after 2",
        "Error at 4, skipping. Failed to deserialize record with type 2",
    ]
    _rc, out, _err = dump(part, "--format", "jsonl")
    last = [o for o in objects(out) if o["type"] == "record"][-1]["value"]
    assert last["error"] == "Error at 4, skipping. Failed to deserialize record with type 2 (field name of 8 bytes " \
                            "runs past the 2 bytes left)"


@pytest.mark.slow
def test_every_real_metadata_record_has_a_known_type_and_topic_ids_agree_with_partition_metadata():
    """The brokers' own metadata logs and snapshots: no unknown record type; every TopicRecord's id is the
    one the topic's partition.metadata files (written by the same broker) hold."""
    decoder = ClusterMetadata()
    types, errors, checked, partitions = set(), [], 0, 0
    for path in [*metadata_logs(), *snapshots()]:
        rc, out, _err = dump(path, "--format", "jsonl")
        topic_ids = {}
        for o in objects(out):
            if o["type"] != "record" or o["control"] is not None:
                continue
            value = o["value"]
            assert "Unknown metadata id" not in json.dumps(value), (path, o["offset"])
            if "error" in value:
                errors.append((path, o["offset"]))
                continue
            types.add(value["type"])
            if value["type"] == "TOPIC_RECORD":
                topic_ids[value["data"]["name"]] = value["data"]["topicId"]
            elif value["type"] == "PARTITION_RECORD" and path.is_dir():  # a log names its topics before them
                assert value["data"]["topicId"] in topic_ids.values(), (path, o["offset"])
                assert value["data"]["leader"] in value["data"]["replicas"] + [-1], (path, o["offset"])
                partitions += 1
        log_dir = path.parent if path.is_dir() or path.name == "bootstrap.checkpoint" else path.parent.parent
        for meta in log_dir.glob("*-*/partition.metadata"):
            topic = meta.parent.name.rsplit("-", 1)[0]
            if topic in topic_ids:
                assert f"topic_id: {topic_ids[topic]}" in meta.read_text(), meta
                checked += 1
    assert decoder.name == "cluster-metadata"
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "REGISTER_BROKER_RECORD", "FEATURE_LEVEL_RECORD"} <= types
    assert checked >= 20 and partitions >= 100
    # Only the apache/kafka checkout's test brokers (a development build whose PartitionRecord v1 held the ELR
    # fields that released Kafka moved to v2) write records the released schemas do not read.
    assert {"apache__kafka" in p.parts for p, _ in errors} <= {True}, errors[:3]


@pytest.mark.slow
def test_every_real_consumer_offsets_and_transaction_state_record_decodes():
    decoded = 0
    for root in REAL_DIRS:
        for path in sorted(require(root).rglob("*")):
            if not (path.is_dir() and for_path(path) is not None and path.name.startswith(("__consumer_offsets-",
                                                                                          "__transaction_state-"))):
                continue
            if not any(f.stat().st_size for f in path.glob("*.log")):
                continue
            _rc, out, _err = dump(path, "--format", "jsonl")
            for o in objects(out):
                if o["type"] == "record" and o["control"] is None:
                    assert "error" not in (o["key"] or {}) and "error" not in (o["value"] or {}), (path, o["offset"])
                    decoded += 1
    assert decoded > 10_000


# ------------------------------------------------------------------------------------ the engine

def test_jackson_writes_what_kafkas_tools_print():
    assert jackson({"a": "x\n\t\"\\/é\x01\x1f", "b": [1, None, True], "c": 1.5e7, "d": b"\x00\xff"}) == \
        '{"a":"x\\n\\t\\"\\\\/é\\u0001\\u001F","b":[1,null,true],"c":1.5E7,"d":"AP8="}'
    assert [java_double(x) for x in (1e7, 9999999.0, 0.001, 0.0001, 123.25, -2.5e-5, 0.0, -0.0)] == \
        ["1.0E7", "9999999.0", "0.001", "1.0E-4", "123.25", "-2.5E-5", "0.0", "-0.0"]


def test_tagged_fields_are_printed_only_where_not_the_default():
    schema = parse("""
MESSAGE M versions=0-1 flexible=1+
A int32 0+
B int64 1+ default=-1 tag=0 tagged=1+
C string 1+ nullable=1+ default=null tag=1 tagged=1+
""")["M"]
    assert schema.read(struct.pack(">i", 5), 0) == ({"a": 5}, 4)
    untagged = struct.pack(">i", 5) + bytes([0])
    assert schema.read(untagged, 1)[0] == {"a": 5}
    tagged = struct.pack(">i", 5) + bytes([2, 0, 8]) + struct.pack(">q", -1) + bytes([1, 3]) + compact("hi")
    assert schema.read(tagged, 1)[0] == {"a": 5, "c": "hi"}  # B holds its default: left out


@pytest.mark.slow
def test_decoders_never_raise_on_mutated_real_keys_and_values():
    """Seeded mutations of real internal-topic keys and values: each decoder gives text and JSON objects."""
    rng = random.Random(14)
    samples = []
    for root in REAL_DIRS:
        written = [p for p in sorted(require(root).rglob("__consumer_offsets-*"))
                   if any(f.stat().st_size for f in p.glob("*.log"))]
        for path in written[:20] + [*require(root).rglob("__transaction_state-*")][:5] + metadata_logs()[:3]:
            _rc, out, _err = dump(path, "--format", "jsonl", "--decoder", "plain", "--key-decoder", "base64",
                                  "--value-decoder", "base64", "--max-records", "40")
            samples += [(o["key"], o["value"]) for o in objects(out) if o["type"] == "record"]
    assert len(samples) > 200
    unb64 = lambda s: None if s is None else base64.b64decode(s)  # noqa: E731
    decoders = [d() for d in BY_NAME.values()]
    for i in range(3000):
        key, value = map(unb64, rng.choice(samples))
        key, value = _mutated(key, rng), _mutated(value, rng)
        for d in decoders:
            texts = d.texts(i, key, value)
            assert all(t is None or isinstance(t, str) for t in texts)
            json.dumps(d.objects(i, key, value))
    assert Offsets.name == "offsets" and TransactionLog.name == "transaction-log"


# ------------------------------------------------------------------------------------ Kafka's own test vectors


def test_kafkas_dump_log_segments_test_vectors():
    """The records and expected texts of apache/kafka's DumpLogSegmentsTest (testOffsetsMessageParser,
    testTransactionLogMessageParser), the records encoded here as Kafka's generated writers lay them out."""
    offsets, txns = Offsets(), TransactionLog()
    group_key = struct.pack(">h", 3) + s16("group")  # ConsumerGroupMetadataKey
    assert kafka_parse(offsets, group_key, struct.pack(">hi", 0, 10) + bytes([0])) == (
        '{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')
    assert kafka_parse(offsets, group_key, None) == ('{"type":"3","data":{"groupId":"group"}}', "<DELETE>")
    assert kafka_parse(offsets, struct.pack(">h", 32767), b"") == ("Unknown record type 32767 at offset 0, skipping.",
                                                                   None)
    # A ConsumerGroupMemberMetadataValue (every field its default) under a ConsumerGroupMetadataKey
    member_defaults = struct.pack(">h", 0) + bytes([0, 0, 1, 1, 1, 0]) + struct.pack(">i", -1) + bytes([1, 0])
    assert kafka_parse(offsets, group_key, member_defaults) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "Error reading byte array of 536870911 byte(s): only 1 byte(s) available.", None)

    def bytes_(data: bytes) -> bytes:  # compact bytes
        return bytes([len(data) + 1]) + data

    subscription = struct.pack(">hi", 3, 1) + s16("foo") + struct.pack(">i", -1) + struct.pack(">i", 1) + s16("foo") \
        + struct.pack(">iii", 1, 0, 0) + s16("rack")
    assignment = struct.pack(">hi", 3, 1) + s16("foo") + struct.pack(">ii", 1, 0) + struct.pack(">i", -1)

    def group_value(sub: bytes, assign: bytes) -> bytes:
        member = compact("member") + compact("instance") + compact("client") + compact("host") \
            + struct.pack(">ii", 1000, 100) + bytes_(sub) + bytes_(assign) + bytes([0])
        return struct.pack(">h", 4) + compact("consumer") + struct.pack(">i", 10) + compact("range") \
            + compact("member") + struct.pack(">q", -1) + bytes([2]) + member + bytes([0])

    key = struct.pack(">h", 2) + s16("group")
    assert kafka_parse(offsets, key, group_value(subscription, assignment)) == (
        '{"type":"2","data":{"group":"group"}}',
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
        '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}')
    assert kafka_parse(offsets, key, group_value(b"Subscription", b"Assignment"))[1].endswith(
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":"U3Vic2NyaXB0aW9u",'
        '"assignment":"QXNzaWdubWVudA=="}]}}')

    txn_key = struct.pack(">h", 0) + s16("txnId")
    v0 = struct.pack(">hqhib", 0, 123, 0, 0, 0) + struct.pack(">i", 0) + struct.pack(">qq", 0, 0)
    assert kafka_parse(txns, txn_key, v0) == (
        '{"type":"0","data":{"transactionalId":"txnId"}}',
        '{"version":"0","data":{"producerId":123,"producerEpoch":0,"transactionTimeoutMs":0,'
        '"transactionStatus":0,"transactionPartitions":[],"transactionLastUpdateTimestampMs":0,'
        '"transactionStartTimestampMs":0}}')
    assert kafka_parse(txns, txn_key, None)[1] == "<DELETE>"
    partitions = bytes([3]) + compact("topic1") + bytes([4]) + struct.pack(">iii", 0, 1, 2) + bytes([0]) \
        + compact("topic2") + bytes([4]) + struct.pack(">iii", 3, 4, 5) + bytes([0])
    tags = bytes([3, 0, 8]) + struct.pack(">q", 11) + bytes([1, 8]) + struct.pack(">q", 10) + bytes([2, 2]) \
        + struct.pack(">h", 0)
    v1 = struct.pack(">hqhib", 1, 12, 2, 14, 0) + partitions + struct.pack(">qq", 123, 13) + tags
    assert kafka_parse(txns, txn_key, v1)[1] == (
        '{"version":"1","data":{"producerId":12,"previousProducerId":11,"nextProducerId":10,'
        '"producerEpoch":2,"transactionTimeoutMs":14,"transactionStatus":0,'
        '"transactionPartitions":[{"topic":"topic1","partitionIds":[0,1,2]},'
        '{"topic":"topic2","partitionIds":[3,4,5]}],"transactionLastUpdateTimestampMs":123,'
        '"transactionStartTimestampMs":13}}')
