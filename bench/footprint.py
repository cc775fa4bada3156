"""`halfmq bench footprint`: what `pip install` of the SDK costs beside the usual Python broker clients.

    halfmq bench footprint [--runs 15] [--json docs/bench/footprint.json] [--wheel dist/halfmq-….whl]

Each client goes into its own fresh venv (``python -m venv``, then ``pip install``); the figures
are the packages and megabytes it adds over an empty venv, and the median wall time of a new
interpreter importing it, every client's runs interleaved so a noisy neighbour hits all alike.
Read the ratio to ``import redis.asyncio``, not the milliseconds. The packaging tests
(tests/integration/packaging) gate the SDK with these same functions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["CLIENTS", "Client", "Venv", "fresh_venv", "import_medians", "main", "pip_install", "render", "run"]

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = "redis-py"


@dataclass(frozen=True)
class Client:
    name: str
    requirement: str  # "" for the halfmq wheel, which is built or given
    imports: str


CLIENTS = (
    Client("halfmq SDK", "", "from halfmq import AsyncProducer"),
    Client("redis-py", "redis", "import redis.asyncio"),
    Client("nats-py", "nats-py", "import nats"),
    Client("aio-pika", "aio-pika", "import aio_pika"),
    Client("confluent-kafka", "confluent-kafka", "import confluent_kafka"),
    Client("aiokafka", "aiokafka", "import aiokafka"),
)
# More of halfmq's own: the blocking client, and an AsyncProducer built (which loads aiohttp).
HALFMQ_EXTRA = {
    "halfmq SDK, blocking": "from halfmq import Producer",
    "halfmq SDK, AsyncProducer built": "from halfmq import AsyncProducer; AsyncProducer('http://127.0.0.1:9')",
}


@dataclass
class Venv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        return next((self.root / "lib").glob("python3*/site-packages"))

    def run(self, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run the venv's Python away from any checkout, so only what is installed can be imported."""
        return subprocess.run([str(self.python), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={"PATH": f"{self.root / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)})

    def distributions(self) -> set[str]:
        listed = self.run("-m", "pip", "list", "--format", "json", cwd=self.root)
        assert listed.returncode == 0, listed.stderr
        return {d["name"].lower() for d in json.loads(listed.stdout)}

    def size(self) -> int:
        return sum(f.stat().st_size for f in self.site_packages.rglob("*") if f.is_file())

    def added_over(self, empty: Venv) -> tuple[list[str], float]:
        """The distributions this venv has beyond ``empty``, and the megabytes they weigh."""
        return sorted(self.distributions() - empty.distributions()), (self.size() - empty.size()) / 1e6


def fresh_venv(path: Path) -> Venv:
    done = subprocess.run([sys.executable, "-m", "venv", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return Venv(path)


def pip_install(env: Venv, requirement: str) -> None:
    done = env.run("-m", "pip", "install", "-q", "--disable-pip-version-check", requirement, cwd=env.root, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def build_wheel(out: Path) -> Path:
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return next(out.glob("halfmq-*.whl"))


def import_medians(programs: dict[str, tuple[Venv, str]], runs: int, cwd: Path) -> dict[str, float]:
    """Median seconds for a new interpreter to run each program, the programs interleaved run by run."""
    times: dict[str, list[float]] = {name: [] for name in programs}
    names = list(programs)
    for i in range(runs + 1):
        for name in names[i % len(names):] + names[:i % len(names)]:  # rotate, so none is always first
            env, program = programs[name]
            started = time.perf_counter()
            done = env.run("-c", program, cwd=cwd)
            elapsed = time.perf_counter() - started
            assert done.returncode == 0, f"{name}: {done.stderr}"
            if i:  # the first round warms the page cache and writes bytecode
                times[name].append(elapsed)
    return {name: statistics.median(values) for name, values in times.items()}


def run(workdir: Path, runs: int, wheel: Path | None = None) -> dict[str, Any]:
    started = datetime.now(UTC).isoformat(timespec="seconds")
    wheel = wheel or build_wheel(workdir / "dist")
    empty = fresh_venv(workdir / "empty")
    envs: dict[str, Venv] = {}
    rows: list[dict[str, Any]] = []
    for client in CLIENTS:
        env = envs[client.name] = fresh_venv(workdir / client.name.replace(" ", "-"))
        pip_install(env, client.requirement or str(wheel))
        packages, megabytes = env.added_over(empty)
        version = env.run("-m", "pip", "show", client.requirement or "halfmq", cwd=workdir).stdout
        rows.append({"client": client.name, "requirement": client.requirement or wheel.name, "imports": client.imports,
                     "version": next((line.split()[1] for line in version.splitlines() if line.startswith("Version:")), None),
                     "packages_added": len(packages), "packages": packages, "megabytes_added": round(megabytes, 2)})
    programs = {client.name: (envs[client.name], client.imports) for client in CLIENTS}
    programs |= {name: (envs["halfmq SDK"], program) for name, program in HALFMQ_EXTRA.items()}
    programs["python -c pass"] = (empty, "pass")
    medians = import_medians(programs, runs, workdir)
    reference = medians[REFERENCE]
    imports = [{"client": name, "imports": programs[name][1], "median_ms": round(seconds * 1000, 1),
                "ratio_to_redis_asyncio": round(seconds / reference, 2)} for name, seconds in medians.items()]
    return {"format": "halfmq-footprint/1", "started_at": started,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": sys.version.split()[0], "runs": runs, "installs": rows, "imports": imports}


# What `pip install halfmq` added over an empty venv before the packaging work (issue 20): once with
# every server-side dependency, then with httpx, pydantic and tenacity beside aiohttp.
BEFORE = ("51 packages / 657 MB (the SDK and the server in one install), then 23 packages / 29.2 MB "
          "(httpx + aiohttp + pydantic + tenacity + orjson; `from halfmq import AsyncProducer` 1.94× `import redis.asyncio`)")


def render(doc: dict[str, Any]) -> list[str]:
    """The footprint table for docs/benchmarks.md."""
    by_name = {row["client"]: row for row in doc["imports"]}
    out = ["## SDK footprint", "", f"Before: {BEFORE}.", "",
           f"Measured {doc['started_at']} by `halfmq bench footprint` (Python {doc['python']}): each client in a fresh "
           f"venv, packages and MB added over an empty venv; import time is the median of {doc['runs']} new "
           "interpreters per row, rows interleaved. Compare the ratios, not the milliseconds.", "",
           "| client | version | packages added | MB added | import | import median (ms) | × `import redis.asyncio` |",
           "|---|---|---:|---:|---|---:|---:|"]
    for row in doc["installs"]:
        timing = by_name[row["client"]]
        out.append(f"| {row['client']} | {row['version']} | {row['packages_added']} | {row['megabytes_added']:.1f} | "
                   f"`{row['imports']}` | {timing['median_ms']:.0f} | {timing['ratio_to_redis_asyncio']:.2f}× |")
    for name in [*HALFMQ_EXTRA, "python -c pass"]:
        timing = by_name[name]
        out.append(f"| {name} | | | | `{timing['imports']}` | {timing['median_ms']:.0f} | {timing['ratio_to_redis_asyncio']:.2f}× |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="halfmq bench footprint", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="timed imports per row (default 15)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the result document here")
    parser.add_argument("--wheel", type=Path, help="the halfmq wheel to install (default: build one from this checkout)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="halfmq-footprint-") as tmp:
        doc = run(Path(tmp), args.runs, args.wheel)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print("\n".join(render(doc)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
