"""The `monitoring` compose profile's files, checked statically (CI cannot pull Prometheus or Grafana images).

The dashboard may only chart series a real broker exports: every metric name in
its queries is looked up in a live broker's /metrics.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "docs" / "grafana" / "halfmq-dashboard.json"
MONITORING = ROOT / "docker" / "monitoring"
_FUNCTIONS = {"sum", "by", "rate", "or", "histogram_quantile", "le"}


def test_prometheus_scrapes_the_broker_with_the_admin_token_from_the_auth_volume() -> None:
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    [job] = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["broker:10911"]
    assert job["authorization"]["credentials_file"] == "/data/auth/admin.token"


def test_grafana_is_provisioned_with_the_dashboard_and_the_prometheus_datasource() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    grafana = compose["services"]["grafana"]
    assert grafana["profiles"] == ["monitoring"] and compose["services"]["prometheus"]["profiles"] == ["monitoring"]
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"])
    assert mounts["./docs/grafana"] == "/var/lib/grafana/dashboards"
    provider = yaml.safe_load((MONITORING / "grafana/provisioning/dashboards/halfmq.yml").read_text())
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    [source] = yaml.safe_load((MONITORING / "grafana/provisioning/datasources/prometheus.yml").read_text())["datasources"]
    dashboard = json.loads(DASHBOARD.read_text())
    assert {p["datasource"]["uid"] for p in dashboard["panels"]} == {source["uid"]}
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


def _series_in(expr: str) -> set[str]:
    names = set(re.findall(r"\b(halfmq_[a-z_]+)", expr))
    return {n for n in names if n not in _FUNCTIONS}


def test_every_series_the_dashboard_charts_is_exported_by_a_real_broker(broker) -> None:
    text = httpx.get(f"{broker.url}/metrics", timeout=10).text
    exported = set(re.findall(r"^# TYPE (\S+) (\S+)", text, re.M))
    names = set()
    for name, kind in exported:
        names.add(name)
        names |= {f"{name}_total"} if kind == "counter" else set()
        names |= {f"{name}_bucket", f"{name}_count", f"{name}_sum"} if kind == "histogram" else set()
    charted = {s for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"] for s in _series_in(t["expr"])}
    assert charted and not charted - names, f"charted but not exported: {sorted(charted - names)}"
