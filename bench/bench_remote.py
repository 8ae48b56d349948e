"""An index on object storage: publish, open and query it from an S3-compatible server.

Starts moto's S3 server on 127.0.0.1 (the one the tests use; an S3 service over a real
network is slower), publishes a saved index there (``uc.copy_index``), then opens and
queries it in fresh processes: first on a host with an empty cache (opening fetches the
manifests and statistics; the first use fetches the shards and makes their working
copies, timed apart from the queries), then again on that host (everything cached). Writes
``bench/results/remote.json`` and the table in docs/benchmarks.md ("Index on object
storage").

Usage: ``.venv/bin/python bench/bench_remote.py --index INDEX``, e.g.
``/tmp/uncertain-cep-bench/index-1000000-250000`` (what ``bench/bench_pipeline.py``
built).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "remote.json"
DOCS = Path(__file__).parent.parent / "docs" / "benchmarks.md"
QUERIES = ["PATTERN SEQ(A, B) DEFINE A AS a0 < -3, B AS a0 > 2.3 WITHIN 10 CONFIDENCE 0.5",
           "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -3, N AS a1 > 2, B AS a0 > 2.3 "
           "WITHIN 10 CONFIDENCE 0.3"]
_RUN = """
import json, sys, time
import uncertain_cep as uc
import uncertain_cep.api            # the package's modules loaded: opening alone is timed
t = time.perf_counter()
idx = uc.open_index(sys.argv[1])      # the manifests and statistics: what opening fetches
out = {"open_seconds": time.perf_counter() - t, "queries": []}
t = time.perf_counter()
_ = idx.event_index                   # every shard, fetched and mapped (a first query's)
out["map_seconds"] = time.perf_counter() - t
for q in json.loads(sys.argv[2]):
    t = time.perf_counter()
    res = idx.query(q)
    out["queries"].append({"seconds": time.perf_counter() - t, "matches": len(res)})
print("RESULT", json.dumps(out))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", required=True, help="a saved index to publish")
    args = parser.parse_args()
    import pyarrow.fs as pafs

    import uncertain_cep as uc

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"})
    cache = Path(tempfile.mkdtemp(prefix="uncertain-cep-remote-cache-"))
    os.environ["UNCERTAIN_CEP_CACHE"] = str(cache)
    try:
        time.sleep(3)
        pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                          allow_bucket_creation=True).create_dir("bench")
        uri = "s3://bench/index"
        t = time.perf_counter()
        uc.copy_index(args.index, uri)
        publish = time.perf_counter() - t
        stored = sum(p.stat().st_size for p in Path(args.index).rglob("*") if p.is_file())
        runs = {}
        for name in ("cold host", "warm host"):
            done = subprocess.run([sys.executable, "-c", _RUN, uri, json.dumps(QUERIES)],
                                  capture_output=True, text=True, check=True)
            runs[name] = json.loads(done.stdout.split("RESULT", 1)[1])
            print(name, runs[name], flush=True)
    finally:
        server.terminate()
        import shutil

        shutil.rmtree(cache, ignore_errors=True)
    results = {"index": args.index, "stored_mb": round(stored / 2**20),
               "publish_seconds": round(publish, 1), "runs": runs, "queries": QUERIES}
    RESULTS.write_text(json.dumps(results, indent=2))
    lines = ["| host | open: manifests (s) | first use: every shard mapped (s) | "
             "first query (s) "
             "| second query (s) | matches |", "|---|---:|---:|---:|---:|---|"]
    for name, r in runs.items():
        q = r["queries"]
        lines.append(f"| {name} | {r['open_seconds']:.2f} | {r['map_seconds']:.2f} | "
                     f"{q[0]['seconds']:.2f} | "
                     f"{q[1]['seconds']:.2f} | {q[0]['matches']}, {q[1]['matches']} |")
    table = (f"Published ({results['stored_mb']} MB) in {results['publish_seconds']} s.\n\n"
             + "\n".join(lines))
    text = DOCS.read_text()
    begin, end = "<!-- remote:begin -->", "<!-- remote:end -->"
    block = f"{begin}\n{table}\n{end}"
    text = (text.split(begin)[0] + block + text.split(end, 1)[1] if begin in text
            else text + f"\n## Index on object storage\n\n{block}\n")
    DOCS.write_text(text)
    print(table)


if __name__ == "__main__":
    main()
