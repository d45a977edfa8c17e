#!/usr/bin/env python3
"""Writes the hand-made seeds of the jetstream_api, record and checkpoint fuzz targets
into fuzz/corpus/<target>/ (named seed-*, beside libFuzzer's hash-named inputs).

Sources: the $JS.API exchanges recorded from nats-server (tests/data/jsapi/*.json), and
records, checkpoints and state files built here in jetcore's on-disk formats (see
src/store/record.rs, src/stream/checkpoint.rs, src/consumer/state_codec.rs,
src/store/meta_file.rs). Extra data directories written by a real jetcore run can be
given as arguments; their segments, checkpoints and consumer states are added too.

    python3 fuzz/seeds.py [DATA_DIR...]
"""

import json
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
SEED_BYTES_MAX = 8192


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def write(target: str, name: str, data: bytes) -> None:
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"seed-{name}").write_bytes(data[:SEED_BYTES_MAX])


# --- jetstream_api: "subject\nbody" ---------------------------------------------------

def jetstream_api_seeds() -> None:
    seen = set()
    for tour in sorted((ROOT / "tests" / "data" / "jsapi").glob("*.json")):
        for exchange in json.loads(tour.read_text())["exchanges"]:
            data = (exchange["subject"] + "\n" + (exchange["request"] or "")).encode()
            if data not in seen:
                seen.add(data)
                write("jetstream_api", f"{tour.stem}-{exchange['name']}", data)
    extra = {
        "pull-batch": "$JS.API.CONSUMER.MSG.NEXT.S.C\n5",
        "pull-json": '$JS.API.CONSUMER.MSG.NEXT.S.C\n{"batch":10,"expires":5000000000,'
                     '"idle_heartbeat":1000000000,"max_bytes":1024,"group":"g",'
                     '"min_pending":1,"priority":1}',
        "consumer-full": '$JS.API.CONSUMER.CREATE.S.C.orders.eu\n{"stream_name":"S",'
                         '"config":{"name":"C","durable_name":"C","deliver_policy":'
                         '"by_start_time","opt_start_time":"2024-01-02T03:04:05.123456789Z",'
                         '"ack_policy":"explicit","ack_wait":30000000000,"max_deliver":5,'
                         '"backoff":[1000000000,2000000000],"filter_subject":"orders.eu",'
                         '"replay_policy":"instant","max_ack_pending":100,"max_waiting":10,'
                         '"priority_groups":["g"],"priority_policy":"overflow",'
                         '"pause_until":"2030-01-01T00:00:00Z","metadata":{"a":"b"}},'
                         '"action":"create"}',
        "consumer-push": '$JS.API.CONSUMER.CREATE.S\n{"stream_name":"S","config":'
                         '{"deliver_subject":"d.x","deliver_group":"q","flow_control":true,'
                         '"idle_heartbeat":5000000000,"filter_subjects":["orders.*",'
                         '"telemetry.a"],"headers_only":true}}',
        "stream-full": '$JS.API.STREAM.CREATE.T\n{"name":"T","subjects":["t.*","u.>"],'
                       '"retention":"workqueue","max_consumers":-1,"max_msgs":100,'
                       '"max_bytes":1048576,"max_age":60000000000,"max_msgs_per_subject":3,'
                       '"max_msg_size":1024,"discard":"new","discard_new_per_subject":true,'
                       '"storage":"memory","num_replicas":1,"duplicate_window":1000000000,'
                       '"allow_rollup_hdrs":true,"allow_msg_ttl":true,"deny_delete":true,'
                       '"subject_delete_marker_ttl":1000000000,"metadata":{"k":"v"},'
                       '"consumer_limits":{"inactive_threshold":1000,"max_ack_pending":5},'
                       '"pedantic":true}',
        "direct-get": '$JS.API.DIRECT.GET.S\n{"multi_last":["a.*"],"up_to_time":'
                      '"2024-01-01T00:00:00Z","batch":3}',
        "pause": '$JS.API.CONSUMER.PAUSE.S.C\n{"pause_until":"2099-12-31T23:59:59.999999999Z"}',
        "msg-get": '$JS.API.STREAM.MSG.GET.S\n{"next_by_subj":"a.b","seq":4}',
    }
    for name, text in extra.items():
        write("jetstream_api", name, text.encode())


# --- record: segment bytes -------------------------------------------------------------

def record(kind: int, stream_id: int, seq: int, subject: bytes, headers: bytes = b"",
           payload: bytes = b"", timestamp_ns: int = 1_700_000_000_000_000_000) -> bytes:
    length = 44 + len(subject) + len(headers) + len(payload)
    body = struct.pack("<BBHIIQQq", kind, 0, len(subject), len(headers), len(payload),
                       stream_id, seq, timestamp_ns) + subject + headers + payload
    head = struct.pack("<I", length)
    return head + struct.pack("<I", crc32c(head + body)) + body


def pad(data: bytes, block: int = 4096) -> bytes:
    return data + bytes(-len(data) % block)


def record_seeds() -> None:
    sid = 0x1122334455667788
    message = record(1, sid, 1, b"orders.eu", b"NATS/1.0\r\nNats-Msg-Id: a\r\n\r\n", b"hello")
    write("record", "message", message)
    write("record", "delete", record(2, sid, 1, b""))
    write("record", "front", record(3, sid, 5, b""))
    write("record", "purge", record(4, sid, 3, b"orders.*", b"", struct.pack("<Q", 2**64 - 1)))
    group = b"".join(record(1, sid, seq, b"a.b", b"", bytes([seq]) * seq) for seq in range(1, 6))
    write("record", "group", group)
    write("record", "two-groups", pad(group) + record(1, sid, 6, b"a.c", b"", b"x"))
    damaged = bytearray(group)
    damaged[60] ^= 4
    write("record", "damaged-middle", bytes(damaged))
    write("record", "torn-tail", group + record(1, sid, 9, b"a.b", b"", b"tail")[:30])
    write("record", "stale-seq", group + record(1, sid, 2, b"a.b", b"", b"old"))
    write("record", "short-padding", pad(group[: 4096 - 2]) + record(1, sid, 7, b"z", b"", b""))


# --- checkpoint: selector byte + file ------------------------------------------------

def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def consumer_state(delivered, floor, pending) -> bytes:
    body = bytes([1]) + b"".join(varint(v) for v in (*delivered, *floor, len(pending)))
    previous = floor[0]
    for stream_seq, consumer_seq, count in pending:
        body += varint(stream_seq - previous) + varint(consumer_seq - floor[1]) + varint(count)
        previous = stream_seq
    return body + struct.pack("<I", crc32c(body))


def log_checkpoint(segments) -> bytes:
    out = struct.pack("<Q", len(segments))
    for seg_id, tail, seqs, index in segments:
        first, last = seqs or (0, 0)
        out += struct.pack("<QQBQQQ", seg_id, tail, 1 if seqs else 0, first, last, len(index))
        out += b"".join(struct.pack("<QQ", seq, offset) for seq, offset in index)
    return out


def blob(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def slot_file(first: int, slots) -> bytes:
    body = b"".join(struct.pack("<IIq", *slot) for slot in slots)
    header = struct.pack("<QI", first, len(slots))
    return pad(b"JCSL" + header + struct.pack("<I", crc32c(header + body)) + body)


def stream_checkpoint() -> tuple[bytes, bytes]:
    # Messages 1..3 live on subjects 0 and 1, 4 deleted after its slot was written (a run
    # in the checkpoint), one dedupe entry, one lost range, one segment, one TTL; and the
    # slot file the checkpoint names.
    slots = slot_file(1, [(0, 10, 1), (1, 20, 2), (0, 30, 3), (0, 40, 4)])
    out = struct.pack("<IQQQq", 5, 7, 1, 4, 1_700_000_000_000_000_000)
    out += bytes([1]) + struct.pack("<QQQQ", 1, 1, 4, len(slots))
    out += struct.pack("<Q", 1) + struct.pack("<QQ", 4, 1)
    subjects = [(0, b"a.b", 2, 1, 3), (1, b"a.c", 1, 2, 2)]
    out += struct.pack("<Q", len(subjects))
    for sub_id, name, count, first, last in subjects:
        out += struct.pack("<I", sub_id) + blob(name) + struct.pack("<QQQ", count, first, last)
    out += struct.pack("<Q", 1) + struct.pack("<q", 5) + blob(b"id-1") + struct.pack("<Q", 3)
    out += blob(b"id-1")
    out += struct.pack("<Q", 1) + bytes([7]) + struct.pack("<QQQQQ", 4, 5, 1, 0, 4096)
    out += log_checkpoint([(1, 4096, (1, 3), [(1, 0)])])
    out += struct.pack("<Q", 1) + struct.pack("<qQ", 2_000_000_000_000_000_000, 3)
    out += struct.pack("<QQ", 0, 0)
    return out, slots


def checkpoint_input(head: bytes, slots: bytes) -> bytes:
    """The checkpoint target's selector 0: the body's length, the body, its slot file."""
    return b"\x00" + struct.pack("<I", len(head)) + head + slots


def meta_file(body: bytes) -> bytes:
    return pad(b"JCMF" + struct.pack("<QI", len(body), crc32c(body)) + body)


def checkpoint_seeds() -> None:
    write("checkpoint", "stream", checkpoint_input(*stream_checkpoint()))
    write("checkpoint", "consumer-empty", b"\x01" + consumer_state((0, 0), (0, 0), []))
    write("checkpoint", "consumer-pending", b"\x01" + consumer_state(
        (10, 12), (3, 4), [(5, 5, 1), (7, 8, 3), (10, 12, 1)]))
    write("checkpoint", "meta-json", b"\x02" + meta_file(json.dumps({
        "config": {"name": "S", "subjects": ["a.*"]}, "stream_id": 7,
        "placement": 0, "created_ns": 1, "last_seq_floor": 0}).encode()))
    write("checkpoint", "meta-checkpoint", b"\x02" + meta_file(stream_checkpoint()[0]))
    write("checkpoint", "log", b"\x03" + log_checkpoint(
        [(1, 8192, (1, 9), [(1, 0), (5, 4096)]), (2, 0, None, [])]))


def data_dir_seeds(directory: pathlib.Path) -> None:
    tag = directory.name
    for number, segment in enumerate(sorted(directory.rglob("*.seg"))[:4]):
        with segment.open("rb") as file:
            head = file.read(SEED_BYTES_MAX)
        write("record", f"{tag}-segment-{number}", head.rstrip(b"\x00"))
    for number, path in enumerate(sorted(directory.rglob("checkpoint.bin"))[:4]):
        raw = path.read_bytes()
        write("checkpoint", f"{tag}-file-{number}", b"\x02" + raw)
        (length,) = struct.unpack("<Q", raw[4:12])
        slot_files = sorted(path.parent.glob("slots.*.bin"), key=lambda file: int(file.name.split(".")[1]))
        slots = slot_files[-1].read_bytes() if slot_files else b""
        write("checkpoint", f"{tag}-body-{number}", checkpoint_input(raw[16:16 + length], slots))
    for number, path in enumerate(sorted(directory.rglob("*.state"))[:4]):
        write("checkpoint", f"{tag}-state-{number}", b"\x01" + path.read_bytes())
    for number, path in enumerate(sorted(directory.rglob("meta.json"))[:2]):
        write("checkpoint", f"{tag}-meta-{number}", b"\x02" + path.read_bytes())


def main() -> None:
    jetstream_api_seeds()
    record_seeds()
    checkpoint_seeds()
    for argument in sys.argv[1:]:
        data_dir_seeds(pathlib.Path(argument))


if __name__ == "__main__":
    main()
