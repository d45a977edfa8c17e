"""Record nats-server's replies to a tour of $JS.API requests into tour.json, and to a
shorter tour against a server with a JetStream domain into tour_domain.json.

Usage: /work/venv-jsapi/bin/python tests/data/jsapi/record.py [path/to/nats-server]
Replays TOUR (below) in order against a fresh nats-server started with JetStream, and
stores each reply's raw bytes (key order preserved) so tests can compare field sets,
values and key order with jetcore's serialisation. State carries from step to step.
"""
import asyncio, json, os, shutil, signal, socket, subprocess, sys, tempfile, time
import nats
from nats.errors import NoRespondersError, TimeoutError as NatsTimeout

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, subject, body or None, headers or None)
TOUR = [
    ("stream_names_no_streams", "$JS.API.STREAM.NAMES", "", None),
    ("stream_list_no_streams", "$JS.API.STREAM.LIST", "", None),
    ("info_empty_body", "$JS.API.INFO", "", None),
    ("info_null_body", "$JS.API.INFO", "null", None),
    ("info_array_body", "$JS.API.INFO", "[]", None),
    ("info_object_body", "$JS.API.INFO", "{}", None),
    ("stream_create_defaults", "$JS.API.STREAM.CREATE.ORDERS", '{"name":"ORDERS","subjects":["orders.*"]}', None),
    ("stream_create_idempotent", "$JS.API.STREAM.CREATE.ORDERS", '{"name":"ORDERS","subjects":["orders.*"]}', None),
    ("stream_create_different_config", "$JS.API.STREAM.CREATE.ORDERS", '{"name":"ORDERS","subjects":["orders.*"],"max_msgs":10}', None),
    ("stream_create_overlap", "$JS.API.STREAM.CREATE.BAD", '{"name":"BAD","subjects":["orders.created"]}', None),
    ("stream_create_name_mismatch", "$JS.API.STREAM.CREATE.X", '{"name":"Y","subjects":["y.>"]}', None),
    ("stream_create_malformed_json", "$JS.API.STREAM.CREATE.X", '{"name":', None),
    ("stream_create_empty_body", "$JS.API.STREAM.CREATE.EMPTY", "", None),
    ("stream_create_unknown_field", "$JS.API.STREAM.CREATE.UNK", '{"name":"UNK","bogus_field":1}', None),
    ("stream_create_replicas_3", "$JS.API.STREAM.CREATE.R3", '{"name":"R3","num_replicas":3}', None),
    ("stream_create_small_max_age", "$JS.API.STREAM.CREATE.AGE", '{"name":"AGE","max_age":1000}', None),
    ("stream_create_nulls", "$JS.API.STREAM.CREATE.NULLS",
     '{"name":"NULLS","subjects":["nulls.>"],"consumer_limits":null,"metadata":null,"description":null,"placement":null}', None),
    ("stream_create_full", "$JS.API.STREAM.CREATE.FULL", json.dumps({
        "name": "FULL", "description": "every field", "subjects": ["full.a", "full.b.>"],
        "retention": "workqueue", "max_consumers": 10, "max_msgs": 1000, "max_bytes": 1048576,
        "max_age": 3600000000000, "max_msgs_per_subject": 5, "max_msg_size": 4096,
        "discard": "new", "storage": "memory", "num_replicas": 1, "no_ack": False,
        "duplicate_window": 60000000000, "compression": "none", "first_seq": 100,
        "allow_direct": True, "mirror_direct": False, "sealed": False, "deny_delete": True,
        "deny_purge": True, "allow_rollup_hdrs": False, "allow_msg_ttl": True,
        "subject_delete_marker_ttl": 60000000000, "metadata": {"owner": "jetcore"},
        "consumer_limits": {"inactive_threshold": 10000000000, "max_ack_pending": 500}}), None),
    ("stream_create_kv", "$JS.API.STREAM.CREATE.KV_B", json.dumps({
        "name": "KV_B", "subjects": ["$KV.B.>"], "max_msgs_per_subject": 1, "discard": "new",
        "allow_rollup_hdrs": True, "deny_delete": True, "allow_direct": True, "max_age": 0,
        "max_bytes": -1, "max_msg_size": -1, "storage": "file", "num_replicas": 1,
        "duplicate_window": 120000000000, "max_consumers": -1, "max_msgs": -1,
        "allow_msg_ttl": True}), None),
    ("stream_create_null_body", "$JS.API.STREAM.CREATE.NB", "null", None),
    ("stream_create_bad_discard", "$JS.API.STREAM.CREATE.BD", '{"name":"BD","discard":"sideways"}', None),
    ("stream_create_upper_discard", "$JS.API.STREAM.CREATE.UD", '{"name":"UD","discard":"NEW","retention":"Interest","storage":"Memory"}', None),
    ("stream_create_bad_name", "$JS.API.STREAM.CREATE.a*b", '{"name":"a*b"}', None),
    ("stream_create_deny_purge", "$JS.API.STREAM.CREATE.DP", '{"name":"DP","deny_purge":true,"subjects":["dp"]}', None),
    ("stream_create_sealed", "$JS.API.STREAM.CREATE.SEAL", '{"name":"SEAL","sealed":true}', None),
    ("stream_create_negative_max_age", "$JS.API.STREAM.CREATE.NEG", '{"name":"NEG","max_age":-5}', None),
    ("stream_create_dup_window_over_age", "$JS.API.STREAM.CREATE.DW", '{"name":"DW","max_age":1000000000,"duplicate_window":5000000000}', None),
    ("stream_create_zero_limits", "$JS.API.STREAM.CREATE.ZERO",
     '{"name":"ZERO","max_consumers":0,"max_msgs":0,"max_bytes":0,"max_msgs_per_subject":0,"max_msg_size":0,"num_replicas":0,"max_consumers":-5}', None),
    ("stream_create_sources_passthrough", "$JS.API.STREAM.CREATE.SRC",
     '{"name":"SRC","sources":[{"name":"ORDERS","filter_subject":"orders.paid"}]}', None),
    ("stream_create_short_max_age", "$JS.API.STREAM.CREATE.SHORT", '{"name":"SHORT","max_age":30000000000,"subjects":["short"]}', None),
    ("pub_first", "orders.created", "hello", None),
    ("pub_second", "orders.paid", "world", None),
    ("pub_with_msg_id", "orders.created", "one", {"Nats-Msg-Id": "m1"}),
    ("pub_duplicate_msg_id", "orders.created", "one", {"Nats-Msg-Id": "m1"}),
    ("pub_wrong_expected_last_seq", "orders.created", "x", {"Nats-Expected-Last-Sequence": "1"}),
    ("pub_wrong_expected_stream", "orders.created", "x", {"Nats-Expected-Stream": "OTHER"}),
    ("pub_wrong_last_msg_id", "orders.created", "x", {"Nats-Expected-Last-Msg-Id": "nope"}),
    ("pub_wrong_last_subject_seq", "orders.paid", "x", {"Nats-Expected-Last-Subject-Sequence": "9"}),
    ("pub_header_msg", "orders.created", "with-headers", {"X-Custom": "a"}),
    ("pub_full_too_big", "full.a", "x" * 5000, None),
    ("pub_full_ok", "full.a", "x", None),
    ("pub_kv_put", "$KV.B.k1", "v1", None),
    ("pub_no_stream", "nothing.here", "x", None),
    ("pub_deny_purge_stream", "dp", "x", None),
    ("purge_deny_purge", "$JS.API.STREAM.PURGE.DP", "", None),
    ("stream_names_malformed", "$JS.API.STREAM.NAMES", '{"offset":', None),
    ("stream_list_malformed", "$JS.API.STREAM.LIST", '{"offset":', None),
    ("stream_info_malformed", "$JS.API.STREAM.INFO.ORDERS", '{"deleted_details":', None),
    ("stream_info_string_body", "$JS.API.STREAM.INFO.ORDERS", 'hello', None),
    ("consumer_names_no_consumers", "$JS.API.CONSUMER.NAMES.ORDERS", "", None),
    ("consumer_list_no_consumers", "$JS.API.CONSUMER.LIST.ORDERS", "", None),
    ("stream_info", "$JS.API.STREAM.INFO.ORDERS", "", None),
    ("stream_info_null_body", "$JS.API.STREAM.INFO.ORDERS", "null", None),
    ("stream_info_subjects_filter", "$JS.API.STREAM.INFO.ORDERS", '{"subjects_filter":">"}', None),
    ("stream_info_missing", "$JS.API.STREAM.INFO.NOPE", "", None),
    ("stream_info_full", "$JS.API.STREAM.INFO.FULL", "", None),
    ("stream_names", "$JS.API.STREAM.NAMES", "{}", None),
    ("stream_names_empty_body", "$JS.API.STREAM.NAMES", "", None),
    ("stream_names_subject_filter", "$JS.API.STREAM.NAMES", '{"offset":0,"subject":"orders.paid"}', None),
    ("stream_names_null_subject", "$JS.API.STREAM.NAMES", '{"offset":0,"subject":null}', None),
    ("stream_names_no_match", "$JS.API.STREAM.NAMES", '{"subject":"zzz"}', None),
    ("stream_list", "$JS.API.STREAM.LIST", "{}", None),
    ("stream_list_no_match", "$JS.API.STREAM.LIST", '{"subject":"zzz"}', None),
    ("msg_get_seq", "$JS.API.STREAM.MSG.GET.ORDERS", '{"seq":1}', None),
    ("msg_get_last_by_subj", "$JS.API.STREAM.MSG.GET.ORDERS", '{"last_by_subj":"orders.paid"}', None),
    ("msg_get_next_by_subj", "$JS.API.STREAM.MSG.GET.ORDERS", '{"seq":2,"next_by_subj":"orders.created"}', None),
    ("msg_get_with_headers", "$JS.API.STREAM.MSG.GET.ORDERS", '{"last_by_subj":"orders.created"}', None),
    ("msg_get_missing", "$JS.API.STREAM.MSG.GET.ORDERS", '{"seq":99}', None),
    ("msg_get_empty_body", "$JS.API.STREAM.MSG.GET.ORDERS", "", None),
    ("msg_get_missing_stream", "$JS.API.STREAM.MSG.GET.NOPE", '{"seq":1}', None),
    ("msg_delete", "$JS.API.STREAM.MSG.DELETE.ORDERS", '{"seq":2}', None),
    ("msg_delete_again", "$JS.API.STREAM.MSG.DELETE.ORDERS", '{"seq":2}', None),
    ("msg_delete_no_erase", "$JS.API.STREAM.MSG.DELETE.ORDERS", '{"seq":3,"no_erase":true}', None),
    ("msg_delete_denied", "$JS.API.STREAM.MSG.DELETE.FULL", '{"seq":100}', None),
    ("stream_info_deleted_details", "$JS.API.STREAM.INFO.ORDERS", '{"deleted_details":true}', None),
    ("stream_update", "$JS.API.STREAM.UPDATE.ORDERS", '{"name":"ORDERS","subjects":["orders.*"],"max_msgs":100}', None),
    ("stream_update_missing", "$JS.API.STREAM.UPDATE.NOPE", '{"name":"NOPE","subjects":["nope"]}', None),
    ("stream_update_storage_change", "$JS.API.STREAM.UPDATE.ORDERS", '{"name":"ORDERS","subjects":["orders.*"],"storage":"memory"}', None),
    ("direct_get_seq", "$JS.API.DIRECT.GET.KV_B", '{"seq":1}', None),
    ("direct_get_last_subject", "$JS.API.DIRECT.GET.KV_B.$KV.B.k1", "", None),
    ("direct_get_missing", "$JS.API.DIRECT.GET.KV_B.$KV.B.nope", "", None),
    ("direct_get_not_allowed", "$JS.API.DIRECT.GET.ORDERS", '{"seq":1}', None),
    ("consumer_create_durable_pull", "$JS.API.CONSUMER.CREATE.ORDERS.C1",
     '{"stream_name":"ORDERS","config":{"durable_name":"C1","ack_policy":"explicit"}}', None),
    ("consumer_create_durable_pull_again", "$JS.API.CONSUMER.CREATE.ORDERS.C1",
     '{"stream_name":"ORDERS","config":{"durable_name":"C1","ack_policy":"explicit"}}', None),
    ("consumer_create_action_create_differs", "$JS.API.CONSUMER.CREATE.ORDERS.C1",
     '{"stream_name":"ORDERS","config":{"durable_name":"C1","ack_policy":"explicit","max_deliver":3},"action":"create"}', None),
    ("consumer_create_action_update_missing", "$JS.API.CONSUMER.CREATE.ORDERS.NEW1",
     '{"stream_name":"ORDERS","config":{"durable_name":"NEW1","ack_policy":"explicit"},"action":"update"}', None),
    ("consumer_create_filtered", "$JS.API.CONSUMER.CREATE.ORDERS.C2.orders.paid",
     '{"stream_name":"ORDERS","config":{"name":"C2","filter_subject":"orders.paid","ack_policy":"explicit"}}', None),
    ("consumer_create_filter_mismatch", "$JS.API.CONSUMER.CREATE.ORDERS.C3.orders.paid",
     '{"stream_name":"ORDERS","config":{"name":"C3","filter_subject":"orders.created","ack_policy":"explicit"}}', None),
    ("consumer_create_durable_mismatch", "$JS.API.CONSUMER.CREATE.ORDERS.C4",
     '{"stream_name":"ORDERS","config":{"durable_name":"OTHER","ack_policy":"explicit"}}', None),
    ("consumer_create_name_durable_mismatch", "$JS.API.CONSUMER.CREATE.ORDERS",
     '{"stream_name":"ORDERS","config":{"name":"A","durable_name":"B","ack_policy":"explicit"}}', None),
    ("consumer_create_legacy_ephemeral_with_durable", "$JS.API.CONSUMER.CREATE.ORDERS",
     '{"stream_name":"ORDERS","config":{"durable_name":"D","ack_policy":"explicit"}}', None),
    ("consumer_create_stream_name_mismatch", "$JS.API.CONSUMER.CREATE.ORDERS.C5",
     '{"stream_name":"OTHER","config":{"ack_policy":"explicit"}}', None),
    ("consumer_create_missing_stream", "$JS.API.CONSUMER.CREATE.NOPE.C1",
     '{"stream_name":"NOPE","config":{"durable_name":"C1","ack_policy":"explicit"}}', None),
    ("consumer_create_durable_legacy", "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.D1",
     '{"stream_name":"ORDERS","config":{"durable_name":"D1","ack_policy":"explicit","deliver_policy":"last"}}', None),
    ("consumer_create_durable_legacy_no_name", "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.D2",
     '{"stream_name":"ORDERS","config":{"ack_policy":"explicit"}}', None),
    ("consumer_create_no_ack_policy", "$JS.API.CONSUMER.CREATE.ORDERS.NOACK",
     '{"stream_name":"ORDERS","config":{"name":"NOACK"}}', None),
    ("consumer_create_named_ephemeral", "$JS.API.CONSUMER.CREATE.ORDERS.EPH",
     '{"stream_name":"ORDERS","config":{"name":"EPH","ack_policy":"explicit","deliver_policy":"by_start_sequence","opt_start_seq":2}}', None),
    ("consumer_create_push_ordered", "$JS.API.CONSUMER.CREATE.ORDERS",
     json.dumps({"stream_name": "ORDERS", "config": {
         "deliver_subject": "_INBOX.ordered", "ack_policy": "none", "max_deliver": 1,
         "flow_control": True, "idle_heartbeat": 5000000000, "mem_storage": True,
         "num_replicas": 1, "inactive_threshold": 30000000000, "deliver_policy": "all",
         "replay_policy": "instant", "ack_wait": 79200000000000}}), None),
    ("consumer_create_push_durable_group", "$JS.API.CONSUMER.CREATE.ORDERS.PUSH",
     json.dumps({"stream_name": "ORDERS", "config": {
         "durable_name": "PUSH", "deliver_subject": "push.deliver", "deliver_group": "workers",
         "ack_policy": "explicit", "deliver_policy": "new", "backoff": [1000000000, 2000000000],
         "max_deliver": 5, "headers_only": True, "metadata": {"team": "a"},
         "filter_subjects": ["orders.created", "orders.paid"], "replay_policy": "original"}}), None),
    ("consumer_create_push_max_waiting", "$JS.API.CONSUMER.CREATE.ORDERS.PW",
     '{"stream_name":"ORDERS","config":{"durable_name":"PW","deliver_subject":"pw","max_waiting":5,"ack_policy":"explicit"}}', None),
    ("consumer_create_pull_heartbeat", "$JS.API.CONSUMER.CREATE.ORDERS.PHB",
     '{"stream_name":"ORDERS","config":{"durable_name":"PHB","idle_heartbeat":5000000000,"ack_policy":"explicit"}}', None),
    ("consumer_create_last_per_subject_no_filter", "$JS.API.CONSUMER.CREATE.ORDERS.LPS",
     '{"stream_name":"ORDERS","config":{"durable_name":"LPS","deliver_policy":"last_per_subject","ack_policy":"explicit"}}', None),
    ("consumer_create_malformed", "$JS.API.CONSUMER.CREATE.ORDERS.BAD", '{"stream_name":', None),
    ("consumer_create_empty_body", "$JS.API.CONSUMER.CREATE.ORDERS.BAD", "", None),
    ("consumer_create_pull_request_nulls", "$JS.API.CONSUMER.CREATE.ORDERS.NUL",
     '{"stream_name":"ORDERS","config":{"durable_name":"NUL","ack_policy":"explicit","filter_subject":null,"metadata":null,"backoff":null}}', None),
    ("consumer_create_start_time", "$JS.API.CONSUMER.CREATE.ORDERS.ST",
     '{"stream_name":"ORDERS","config":{"durable_name":"ST","ack_policy":"all","deliver_policy":"by_start_time","opt_start_time":"2020-01-02T03:04:05.123456789Z"}}', None),
    ("consumer_create_both_filters", "$JS.API.CONSUMER.CREATE.ORDERS.BF",
     '{"stream_name":"ORDERS","config":{"durable_name":"BF","ack_policy":"explicit","filter_subject":"orders.a","filter_subjects":["orders.b"]}}', None),
    ("consumer_create_multi_filter_subject_api", "$JS.API.CONSUMER.CREATE.ORDERS.MF.orders.a",
     '{"stream_name":"ORDERS","config":{"name":"MF","ack_policy":"explicit","filter_subjects":["orders.a","orders.b"]}}', None),
    ("consumer_create_small_heartbeat", "$JS.API.CONSUMER.CREATE.ORDERS.SH",
     '{"stream_name":"ORDERS","config":{"durable_name":"SH","deliver_subject":"sh","idle_heartbeat":1000,"ack_policy":"explicit"}}', None),
    ("consumer_create_fc_no_hb", "$JS.API.CONSUMER.CREATE.ORDERS.FC",
     '{"stream_name":"ORDERS","config":{"durable_name":"FC","deliver_subject":"fc","flow_control":true,"ack_policy":"explicit"}}', None),
    ("consumer_create_backoff_over_max_deliver", "$JS.API.CONSUMER.CREATE.ORDERS.BO",
     '{"stream_name":"ORDERS","config":{"durable_name":"BO","ack_policy":"explicit","max_deliver":1,"backoff":[1000000000,2000000000]}}', None),
    ("consumer_create_unknown_field", "$JS.API.CONSUMER.CREATE.ORDERS.UF",
     '{"stream_name":"ORDERS","config":{"durable_name":"UF","ack_policy":"explicit","bogus":1}}', None),
    ("consumer_create_bad_ack_policy", "$JS.API.CONSUMER.CREATE.ORDERS.BA",
     '{"stream_name":"ORDERS","config":{"durable_name":"BA","ack_policy":"sometimes"}}', None),
    ("consumer_create_pull_limits", "$JS.API.CONSUMER.CREATE.ORDERS.PL",
     '{"stream_name":"ORDERS","config":{"durable_name":"PL","ack_policy":"explicit","max_batch":10,"max_expires":5000000000,"max_bytes":1024,"max_waiting":7,"max_ack_pending":-1,"inactive_threshold":60000000000,"description":"limits"}}', None),
    ("consumer_create_workqueue_two_unfiltered", "$JS.API.CONSUMER.CREATE.FULL.W1",
     '{"stream_name":"FULL","config":{"durable_name":"W1","ack_policy":"explicit"}}', None),
    ("consumer_create_workqueue_second", "$JS.API.CONSUMER.CREATE.FULL.W2",
     '{"stream_name":"FULL","config":{"durable_name":"W2","ack_policy":"explicit"}}', None),
    ("pull_next_message", "$JS.API.CONSUMER.MSG.NEXT.ORDERS.C1", '{"batch":1,"no_wait":true}', None),
    ("pull_next_bare_integer", "$JS.API.CONSUMER.MSG.NEXT.ORDERS.C1", '1', None),
    ("consumer_info_after_delivery", "$JS.API.CONSUMER.INFO.ORDERS.C1", "", None),
    ("stream_info_with_consumers", "$JS.API.STREAM.INFO.ORDERS", "", None),
    ("consumer_info", "$JS.API.CONSUMER.INFO.ORDERS.C1", "", None),
    ("consumer_info_missing", "$JS.API.CONSUMER.INFO.ORDERS.NOPE", "", None),
    ("consumer_info_missing_stream", "$JS.API.CONSUMER.INFO.NOPE.C1", "", None),
    ("consumer_names", "$JS.API.CONSUMER.NAMES.ORDERS", "{}", None),
    ("consumer_list", "$JS.API.CONSUMER.LIST.ORDERS", "", None),
    ("consumer_names_missing_stream", "$JS.API.CONSUMER.NAMES.NOPE", "", None),
    ("pull_next_no_wait", "$JS.API.CONSUMER.MSG.NEXT.ORDERS.C2", '{"batch":1,"no_wait":true}', None),
    ("pull_next_missing_consumer", "$JS.API.CONSUMER.MSG.NEXT.ORDERS.NOPE", '{"batch":1,"no_wait":true}', None),
    ("consumer_info_after_pull", "$JS.API.CONSUMER.INFO.ORDERS.C2", "", None),
    ("consumer_delete", "$JS.API.CONSUMER.DELETE.ORDERS.C2", "", None),
    ("consumer_delete_missing", "$JS.API.CONSUMER.DELETE.ORDERS.C2", "", None),
    ("purge_denied", "$JS.API.STREAM.PURGE.FULL", "", None),
    ("purge_seq_and_keep", "$JS.API.STREAM.PURGE.ORDERS", '{"seq":2,"keep":1}', None),
    ("purge_filter", "$JS.API.STREAM.PURGE.ORDERS", '{"filter":"orders.paid"}', None),
    ("purge_keep", "$JS.API.STREAM.PURGE.ORDERS", '{"keep":1}', None),
    ("purge_all", "$JS.API.STREAM.PURGE.ORDERS", "", None),
    ("purge_missing_stream", "$JS.API.STREAM.PURGE.NOPE", "", None),
    ("stream_info_after_purge", "$JS.API.STREAM.INFO.ORDERS", "", None),
    ("stream_seal_update", "$JS.API.STREAM.UPDATE.DP", '{"name":"DP","deny_purge":true,"subjects":["dp"],"sealed":true}', None),
    ("pub_sealed", "dp", "x", None),
    ("msg_delete_sealed", "$JS.API.STREAM.MSG.DELETE.DP", '{"seq":1}', None),
    ("unknown_api", "$JS.API.FOO.BAR", "", None),
    ("unknown_api_stream_verb", "$JS.API.STREAM.FROB.ORDERS", "", None),
    ("stream_info_no_name", "$JS.API.STREAM.INFO", "", None),
    ("info_after_tour", "$JS.API.INFO", "", None),
    ("stream_delete", "$JS.API.STREAM.DELETE.ORDERS", "", None),
    ("stream_delete_missing", "$JS.API.STREAM.DELETE.ORDERS", "", None),
    ("stream_names_after_delete", "$JS.API.STREAM.NAMES", "", None),
]


# Replayed against a server configured with `jetstream { domain: hub }`.
DOMAIN_TOUR = [
    ("info_with_domain", "$JS.API.INFO", "", None),
    ("stream_create", "$JS.API.STREAM.CREATE.S", '{"name":"S","subjects":["s"]}', None),
    ("pub", "s", "x", {"Nats-Msg-Id": "a"}),
    ("pub_duplicate", "s", "x", {"Nats-Msg-Id": "a"}),
    ("pub_wrong_expected_last_seq", "s", "x", {"Nats-Expected-Last-Sequence": "7"}),
    ("stream_info", "$JS.API.STREAM.INFO.S", "", None),
    ("stream_list", "$JS.API.STREAM.LIST", "", None),
    ("consumer_create", "$JS.API.CONSUMER.CREATE.S.C", '{"stream_name":"S","config":{"durable_name":"C","ack_policy":"explicit"}}', None),
    ("consumer_info", "$JS.API.CONSUMER.INFO.S.C", "", None),
]


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def start(binary, domain=None):
    store, port = tempfile.mkdtemp(prefix="jsapi-rec-"), free_port()
    args = [binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", store]
    if domain:
        config = os.path.join(store, "js.conf")
        with open(config, "w") as f:
            f.write(f'jetstream {{ store_dir: "{store}/js", domain: {domain} }}\n')
        args = [binary, "-a", "127.0.0.1", "-p", str(port), "-c", config]
    proc = subprocess.Popen(args,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(300):
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2) as s:
                if s.recv(5) == b"INFO ":
                    return proc, store, port
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"{binary} did not start")


async def pull(nc, subject, body):
    """Pull replies carry the stored subject, so use a dedicated inbox, not the muxed one."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(subject, body.encode(), reply=inbox)
    try:
        return await sub.next_msg(timeout=2)
    finally:
        await sub.unsubscribe()


async def replay(port, tour):
    nc = await nats.connect(f"nats://127.0.0.1:{port}")
    version = nc._server_info.get("version")
    out = []
    for name, subject, body, headers in tour:
        entry = {"name": name, "subject": subject, "request": body}
        if headers:
            entry["headers"] = headers
        try:
            if name.startswith("pull_"):
                r = await pull(nc, subject, body)
            else:
                r = await nc.request(subject, body.encode(), timeout=2, headers=headers)
            if r.headers:
                entry["reply_headers"] = dict(r.headers)
            entry["reply"] = r.data.decode(errors="replace")
            if not r.subject.startswith("_INBOX."):
                entry["reply_msg_subject"] = r.subject
            if r.reply:
                entry["reply_msg_reply"] = r.reply
        except NoRespondersError:
            entry["no_responders"] = True
        except NatsTimeout:
            entry["timeout"] = True
        out.append(entry)
    await nc.close()
    return version, out


async def record(binary, tour, file_name, domain=None):
    proc, store, port = start(binary, domain)
    try:
        version, exchanges = await replay(port, tour)
    finally:
        os.killpg(proc.pid, signal.SIGKILL); proc.wait(); shutil.rmtree(store, ignore_errors=True)
    doc = {"server": "nats-server", "version": version, "domain": domain,
           "note": "Recorded by record.py; replies are raw bytes as text, replayed in order.",
           "exchanges": exchanges}
    with open(os.path.join(HERE, file_name), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"recorded {len(exchanges)} exchanges from nats-server {version} into {file_name}")


def write_js_diff_requests():
    """The main tour as a request file for /work/shared/tools/js-diff (which has no way to
    send headers, so publishes with headers are left out and later replies may shift)."""
    lines = ["# Generated by record.py from TOUR; replay with: js-diff <server> tour.requests"]
    for name, subject, body, headers in TOUR:
        if headers:
            lines.append(f"# skipped {name}: needs headers {sorted(headers)}")
        elif name.startswith("pub_") or name.startswith("pull_"):
            lines.append(f"PUB {subject} {body}")
        else:
            lines.append(f"{subject} {body}".rstrip())
    with open(os.path.join(HERE, "tour.requests"), "w") as f:
        f.write("\n".join(lines) + "\n")


async def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "/work/venv-jsapi/bin/nats-server"
    write_js_diff_requests()
    await record(binary, TOUR, "tour.json")
    await record(binary, DOMAIN_TOUR, "tour_domain.json", domain="hub")

asyncio.run(main())
