"""Replays $JS.API requests against nats-server and jetcore started with the same
configuration file (js-diff cannot pass one) and prints both replies where they differ.
  /work/venv/bin/python tools/accounts/limits_diff.py NATS_SERVER JETCORE CONFIG REQUESTS
REQUESTS: one `[@USER:PASSWORD] SUBJECT JSON-OR-EMPTY` per line; `#` starts a comment.
A line starting `@USER:PASSWORD` is sent from a connection with those credentials (one
per user, so requests of several accounts interleave); others from an anonymous one.
Volatile fields (timestamps, ids, versions) are dropped before comparing."""
import asyncio, json, os, socket, subprocess, sys, tempfile, time
import nats

VOLATILE = {"created", "ts", "ts_nanos", "server_id", "first_ts", "last_ts", "metadata", "cluster", "api"}

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def start(binary, config, store):
    port = free_port()
    args = [binary, "-c", config, "-a", "127.0.0.1", "-p", str(port), "-sd", store]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{binary} did not start")

def scrub(value):
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value

async def replay(port, lines):
    connections = {}
    out = []
    for user, subject, body in lines:
        if user not in connections:
            name, _, password = (user or "").partition(":")
            connections[user] = await nats.connect(
                f"nats://127.0.0.1:{port}", user=name or None, password=password or None)
        try:
            msg = await connections[user].request(subject, body.encode(), timeout=2)
            out.append(scrub(json.loads(msg.data)) if msg.data else msg.headers)
        except Exception as error:
            out.append(type(error).__name__)
    for nc in connections.values():
        await nc.close()
    return out

def main():
    theirs_bin, ours_bin, config, requests = sys.argv[1:5]
    lines = []
    for line in open(requests):
        line = line.strip()
        if line and not line.startswith("#"):
            user = None
            if line.startswith("@"):
                user, _, line = line[1:].partition(" ")
            subject, _, body = line.partition(" ")
            lines.append((user, subject, body))
    results = []
    for binary in (theirs_bin, ours_bin):
        with tempfile.TemporaryDirectory() as store:
            proc, port = start(binary, config, store)
            try:
                results.append(asyncio.run(replay(port, lines)))
            finally:
                proc.terminate()
                proc.wait()
    differ = 0
    for (user, subject, _), theirs, ours in zip(lines, *results):
        subject = f"{user.partition(':')[0]}> {subject}" if user else subject
        if theirs != ours:
            differ += 1
            print(f"DIFF {subject}\n  nats-server: {json.dumps(theirs)}\n  jetcore:     {json.dumps(ours)}")
        else:
            print(f"same {subject}: {json.dumps(theirs)[:160]}")
    print(f"{differ} of {len(lines)} replies differ")

main()
