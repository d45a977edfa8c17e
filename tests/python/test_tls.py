"""nats-py over TLS against jetcore: `tls=ssl_ctx` after the plaintext INFO, and
`tls_handshake_first` against `handshake_first: true`; pub/sub and JetStream inside the
session; `verify` with and without a client certificate. Certificates are made per test
with the openssl command (a CA, a server certificate for IP 127.0.0.1, a client one)."""
import os
import ssl
import subprocess
import tempfile

import nats
import pytest

from conftest import JetcoreServer


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def issue(directory, name, subject, extensions):
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", "-subj", subject, cwd=directory)
    with open(os.path.join(directory, f"{name}.ext"), "w") as file:
        file.write(extensions)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
            "-CAcreateserial", "-days", "1", "-out", f"{name}.pem", "-extfile", f"{name}.ext", cwd=directory)


@pytest.fixture
def certificates():
    with tempfile.TemporaryDirectory(prefix="jetcore-py-tls-") as directory:
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "ca-key.pem", "-out", "ca.pem", "-subj", "/CN=jetcore test CA", "-days", "1",
                cwd=directory)
        issue(directory, "server", "/CN=localhost",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        issue(directory, "client", "/CN=client",
              "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
        yield directory


def start_with(directory, tls_lines):
    config = os.path.join(directory, "jetcore.conf")
    with open(config, "w") as file:
        file.write("tls {\n"
                   f"  cert_file: \"{directory}/server.pem\"\n"
                   f"  key_file: \"{directory}/server-key.pem\"\n"
                   f"{tls_lines}\n}}\n")
    return JetcoreServer(os.path.join(directory, "store"), extra_args=["-c", config])


def client_context(directory, with_certificate=False):
    context = ssl.create_default_context(cafile=os.path.join(directory, "ca.pem"))
    if with_certificate:
        context.load_cert_chain(os.path.join(directory, "client.pem"), os.path.join(directory, "client-key.pem"))
    return context


async def pub_sub_and_jetstream(nc):
    subscription = await nc.subscribe("tls.py")
    large = bytes(range(256)) * 1000
    await nc.publish("tls.py", large)
    for i in range(500):
        await nc.publish("tls.py", str(i).encode())
    message = await subscription.next_msg(timeout=5)
    assert message.data == large
    for i in range(500):
        assert (await subscription.next_msg(timeout=5)).data == str(i).encode()
    js = nc.jetstream(timeout=5)
    await js.add_stream(name="TLSPY", subjects=["tlspy.>"])
    for i in range(50):
        ack = await js.publish("tlspy.a", f"m{i}".encode())
        assert ack.seq == i + 1
    assert (await js.stream_info("TLSPY")).state.messages == 50


async def test_nats_py_with_an_ssl_context(certificates):
    server = start_with(certificates, "")
    try:
        nc = await nats.connect(server.url, tls=client_context(certificates), allow_reconnect=False)
        await pub_sub_and_jetstream(nc)
        await nc.close()
    finally:
        server.kill()


async def test_nats_py_handshake_first(certificates):
    server = start_with(certificates, "  handshake_first: true")
    try:
        nc = await nats.connect(server.url, tls=client_context(certificates), tls_handshake_first=True,
                                allow_reconnect=False)
        await pub_sub_and_jetstream(nc)
        await nc.close()
    finally:
        server.kill()


async def test_verify_needs_a_client_certificate(certificates):
    server = start_with(certificates, f"  verify: true\n  ca_file: \"{certificates}/ca.pem\"")
    try:
        nc = await nats.connect(server.url, tls=client_context(certificates, with_certificate=True),
                                allow_reconnect=False)
        await nc.flush()
        await nc.close()
        with pytest.raises(Exception):
            refused = await nats.connect(server.url, tls=client_context(certificates), allow_reconnect=False,
                                         connect_timeout=5)
            await refused.flush(timeout=5)
    finally:
        server.kill()
