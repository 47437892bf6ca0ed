"""A real S3 API on loopback for the object-storage tests: ``moto_server`` (moto[server]), an HTTP server in
a process of its own, started by a fixture and stopped after (not moto's in-process mocks). Each test gets
a bucket of its own, and the environment an operator sets: ``QSOLVE_STORAGE_URL``, ``AWS_ENDPOINT_URL``,
``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (values no output may show)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

KEY_ID = "AKIAQSOLVETESTKEY7Q2Z"
SECRET = "qsolve-test-secret-9f4c1e7ab2d8-never-shown"
REGION = "us-east-1"
START_S = 120.0  # a busy machine's worst start of moto_server; the wait ends as soon as it answers


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen

    def environment(self, bucket: str, prefix: str = "qsolve") -> dict[str, str]:
        return {
            "QSOLVE_STORAGE_URL": f"s3://{bucket}/{prefix}",
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
        }

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET,
        )

    def new_bucket(self) -> str:
        name = f"qsolve-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(log: Path) -> S3Server:
    port = _free_port()
    moto = Path(sys.executable).with_name("moto_server")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(moto), "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_S
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/", timeout=5).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop(process)
                raise RuntimeError(f"moto_server did not start: {log.read_text()[-500:]}") from None
            time.sleep(0.05)
    return S3Server(endpoint, process)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def serving(log: Path) -> Iterator[S3Server]:
    server = start(log)
    try:
        yield server
    finally:
        stop(server.process)
