# Source: /work/shared/bench/peers/http_app.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""Trivial FastAPI app: POST /msg accepts a ~256-byte JSON body (pydantic-validated), returns 200."""
from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI()


class Msg(BaseModel):
    topic: str
    key: str
    body: str


@app.post("/msg")
async def post_msg(m: Msg):
    return {"ok": True, "n": len(m.body)}


@app.get("/health")
async def health():
    return {"ok": True}


# --- extra anchor: naive durable append inside the request (one fsync per request, inline) ---
import os as _os

_LOG_PATH = _os.environ.get("BENCH_APPEND_LOG", "/tmp/http_append_bench.log")
_fd = None


@app.post("/append_fsync")
async def append_fsync(m: Msg):
    global _fd
    if _fd is None:
        _fd = _os.open(_LOG_PATH, _os.O_WRONLY | _os.O_CREAT | _os.O_APPEND, 0o644)
    _os.write(_fd, (m.model_dump_json() + "\n").encode())
    _os.fsync(_fd)  # blocks the event loop on purpose: the naive baseline
    return {"ok": True}
