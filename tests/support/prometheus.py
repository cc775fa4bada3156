"""A throwaway Prometheus (Debian's ``prometheus``) on a free port, a temp config and data dir, for the dashboard's test.

Its configuration is the shipped one (docker/monitoring/prometheus.yml) with what only the compose stack has
swapped for the test's: the broker's address, the token file, a 1 s scrape and rule evaluation.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .processes import ROOT, ManagedProcess, free_port

MONITORING = ROOT / "docker" / "monitoring"


def binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (bin/setup installs Debian's prometheus)")
    return found


SET_SERIES = ("halfmq_cluster_", "halfmq_replication_", "halfmq_replica_")  # a broker set's node exports them (test_set_metrics.py)


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("promtool"), *args], capture_output=True, text=True, timeout=60, check=False)


def config_for(target: str, token_file: Path, rules: Path) -> dict[str, Any]:
    """The shipped configuration, pointed at ``target`` with the token in ``token_file``, scraping every second."""
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    config["rule_files"] = [str(rules)]
    [job] = config["scrape_configs"]
    job["authorization"]["credentials_file"] = str(token_file)
    job["static_configs"] = [{"targets": [target]}]
    return config


class PrometheusProcess(ManagedProcess):
    def __init__(self, root: Path, config: dict[str, Any]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_file = root / "prometheus.yml"
        self.config_file.write_text(yaml.safe_dump(config))
        super().__init__("prometheus", [
            binary("prometheus"), f"--config.file={self.config_file}", f"--storage.tsdb.path={root / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
        ], {}, f"{self.url}/-/ready", root / "prometheus.log")

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's vector, now or ``at`` (unix seconds): [{"metric": {labels}, "value": [time, "value"]}, ...].

        Fails on a PromQL error."""
        params = {"query": expr} if at is None else {"query": expr, "time": str(at)}
        answer = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=10).json()
        assert answer["status"] == "success", f"{expr}: {answer}"
        assert answer["data"]["resultType"] == "vector", expr
        return answer["data"]["result"]

    def rules(self) -> dict[str, dict[str, Any]]:
        """Every loaded rule by name, with its health and state."""
        groups = httpx.get(f"{self.url}/api/v1/rules", timeout=10).json()["data"]["groups"]
        return {rule["name"]: rule for group in groups for rule in group["rules"]}
