"""The in-run HTTP baselines: what the same HTTP stack does with no broker behind it.

The same app as the peers' ``http_app.py`` (bench/peers in the shared tree):
``POST /msg`` validates a ~256-byte JSON body with pydantic and answers, and
``POST /append_fsync`` also appends it to a file and fsyncs inline, blocking
the event loop on purpose - the naive "durable HTTP endpoint" a broker must
beat. Served by uvicorn + uvloop + httptools with one worker, as the peers' HTTP baselines
are (the broker itself runs on uvicorn by default, granian optionally).
"""

from __future__ import annotations

import os

from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI()


class Msg(BaseModel):
    topic: str
    key: str
    body: str


@app.post("/msg")
async def post_msg(m: Msg) -> dict:
    return {"ok": True, "n": len(m.body)}


@app.get("/health")
async def health() -> dict:
    return {"ok": True}


_LOG_PATH = os.environ.get("BENCH_APPEND_LOG", "/tmp/halfmq_bench_append.log")
_fd: int | None = None


@app.post("/append_fsync")
async def append_fsync(m: Msg) -> dict:
    global _fd
    if _fd is None:
        _fd = os.open(_LOG_PATH, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(_fd, (m.model_dump_json() + "\n").encode())
    os.fsync(_fd)  # inline: the naive baseline
    return {"ok": True}
