"""An S3-compatible server for the tests: moto's server mode on 127.0.0.1, with the
environment pointing pyarrow (and any process the test starts) at it, and a bucket.

A plugin of the test suite (``tests/conftest.py``): any test may ask for ``s3``, a
module-scoped fixture (one server per module that uses it)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

__all__ = ["s3"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1, the environment pointing pyarrow at it, and a
    bucket named ``bucket``; yields a ``pyarrow.fs.S3FileSystem`` of it."""
    pafs = pytest.importorskip("pyarrow.fs")
    pytest.importorskip("moto")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                               "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("moto's S3 server did not start")
                time.sleep(0.1)
        fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                               allow_bucket_creation=True)
        fs.create_dir("bucket")
        yield fs
    finally:
        server.terminate()
        server.wait(timeout=10)
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
