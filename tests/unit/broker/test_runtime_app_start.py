"""A broker's start builds what serves /healthz and no more (issue 44: a restart in about a second, and the tests start
hundreds of brokers): FastAPI (the console, /openapi.json, /docs), the console's templates, httpx (the check-back and
etcd clients) and the other commands' modules load at their first use, and then answer as before.

Each case runs in a new interpreter: what a start loads is what ``sys.modules`` holds after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.processes import ROOT

LOADED_LATER = ("fastapi", "jinja2", "httpx", "httpcore", "rich", "grpc", "halfmq.broker.console.pages", "halfmq.broker.cluster.etcd")
OTHER_COMMANDS = ("halfmq.cli.up_command", "halfmq.cli.demo", "halfmq.cli.admin_command", "halfmq.cli.aggregate_command")

# The CLI's steps (settings, runtime, app), then the lifespan and requests as uvicorn would send them.
PROGRAM = """
import asyncio, json, sys
from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.runtime.app import create_app

settings = BrokerSettings(data_dir=sys.argv[1], grpc_port=0)
app = create_app(settings, BrokerRuntime.open(settings))
later = json.loads(sys.argv[2])

def loaded():
    return sorted(name for name in later if name in sys.modules)

async def get(path):
    sent = []
    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}
    async def send(message):
        sent.append(message)
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body

async def main():
    phases = asyncio.Queue()
    await phases.put({"type": "lifespan.startup"})
    said = []
    async def send(message):
        said.append(message["type"])
    lifespan = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, phases.get, send))
    while "lifespan.startup.complete" not in said:
        assert not lifespan.done(), lifespan
        await asyncio.sleep(0.01)
    started = loaded()
    health, _ = await get("/healthz")
    served = loaded()
    document, body = await get("/openapi.json")
    console, _ = await get("/console/login")
    await phases.put({"type": "lifespan.shutdown"})
    await lifespan
    print(json.dumps({"started": started, "health": health, "after_healthz": served, "openapi": document,
                      "paths": len(json.loads(body)["paths"]), "console": console, "after_console": loaded(), "said": said}))

asyncio.run(main())
"""


def _start(tmp_path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path / "data"), json.dumps(LOADED_LATER)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_brokers_start_and_its_healthz_load_neither_fastapi_nor_the_console_nor_httpx_nor_other_commands(tmp_path: Path) -> None:
    seen = _start(tmp_path)
    assert seen["started"] == [], seen
    assert seen["health"] == 200
    assert seen["after_healthz"] == [], seen


def test_the_first_request_past_the_table_builds_fastapi_which_serves_the_document_and_the_console(tmp_path: Path) -> None:
    seen = _start(tmp_path)
    assert seen["openapi"] == 200 and seen["paths"] > 20, seen
    assert seen["console"] == 200, seen
    assert {"fastapi", "jinja2", "halfmq.broker.console.pages"} <= set(seen["after_console"]), seen
    assert seen["said"] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_parsing_a_servers_command_line_loads_no_other_commands_module() -> None:
    program = ("import json, sys\nfrom halfmq.cli.main import main\n"
               "try:\n    main([sys.argv[1], '--help'])\nexcept SystemExit:\n    pass\n"
               "print(json.dumps(sorted(name for name in json.loads(sys.argv[2]) if name in sys.modules)))")
    for command in ("broker", "order", "credit"):
        done = subprocess.run([sys.executable, "-c", program, command, json.dumps(OTHER_COMMANDS)], capture_output=True, text=True,
                              timeout=60, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [], (command, done.stdout[-500:])
        assert f"usage: halfmq {command}" in done.stdout
