"""The `monitoring` compose profile's files, checked without the stack: promtool, and Grafana's provisioning.

Every panel query is also evaluated by a real Prometheus against a real broker in
tests/integration/broker/test_dashboard_queries.py; here each one must at least parse (promtool reads
them as recording rules) and chart only series a real broker exports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import yaml

from tests.support.prometheus import MONITORING, SET_SERIES, promtool

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = MONITORING / "grafana" / "dashboards" / "halfmq-dashboard.json"
PANELS = json.loads(DASHBOARD.read_text())["panels"]


def test_prometheus_scrapes_the_broker_with_the_admin_token_from_the_auth_volume() -> None:
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    [job] = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["broker:10911"]
    assert job["authorization"]["credentials_file"] == "/data/auth/admin.token"
    assert config["rule_files"] == ["rules.yml"]


def test_promtool_passes_the_shipped_config_and_rules_outside_the_container() -> None:
    config = promtool("check", "config", "--syntax-only", str(MONITORING / "prometheus.yml"))  # the token file is the container's
    assert config.returncode == 0, config.stdout + config.stderr
    rules = promtool("check", "rules", str(MONITORING / "rules.yml"))
    alerts = re.findall(r"- alert: (\w+)", (MONITORING / "rules.yml").read_text())
    assert rules.returncode == 0 and f"SUCCESS: {len(alerts)} rules found" in rules.stdout, rules.stdout + rules.stderr


def test_every_panel_has_a_target_whose_query_prometheus_parses(tmp_path: Path) -> None:
    targets = [(p["title"], t) for p in PANELS for t in p["targets"]]
    assert all(p["targets"] for p in PANELS) and all(t["expr"].strip() and t["refId"] for _, t in targets)
    rules = [{"record": f"panel_{i}", "expr": t["expr"]} for i, (_, t) in enumerate(targets)]
    (tmp_path / "panels.yml").write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    checked = promtool("check", "rules", str(tmp_path / "panels.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_legend_names_only_labels_its_query_keeps() -> None:
    for panel in PANELS:
        for t in panel["targets"]:
            kept = set(re.findall(r"by \(([^)]*)\)", t["expr"])[-1].replace(" ", "").split(",")) if " by (" in t["expr"] else set()
            assert set(re.findall(r"\{\{(\w+)\}\}", t["legendFormat"])) <= kept, panel["title"]


def test_grafana_is_provisioned_with_the_dashboard_and_the_prometheus_datasource() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    grafana, prometheus = compose["services"]["grafana"], compose["services"]["prometheus"]
    assert grafana["profiles"] == ["monitoring"] and prometheus["profiles"] == ["monitoring"]
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"])
    assert mounts["./docker/monitoring/grafana/dashboards"] == "/var/lib/grafana/dashboards"
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"/var/lib/grafana/dashboards/{DASHBOARD.name}"
    assert dict(v.split(":")[:2] for v in prometheus["volumes"])["./docker/monitoring/rules.yml"] == "/etc/prometheus/rules.yml"
    provider = yaml.safe_load((MONITORING / "grafana/provisioning/dashboards/halfmq.yml").read_text())
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    [source] = yaml.safe_load((MONITORING / "grafana/provisioning/datasources/prometheus.yml").read_text())["datasources"]
    assert source["url"] == "http://prometheus:9090"
    assert {p["datasource"]["uid"] for p in PANELS} == {t["datasource"]["uid"] for p in PANELS for t in p["targets"]} == {source["uid"]}
    assert len({p["id"] for p in PANELS}) == len(PANELS)
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["schemaVersion"] and all({"type", "title", "gridPos"} <= set(p) for p in PANELS)


def test_every_series_the_dashboard_charts_is_exported_by_a_real_broker(broker) -> None:
    text = httpx.get(f"{broker.url}/metrics", timeout=10).text
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)", text, re.M):
        names.add(name)
        names |= {f"{name}_bucket", f"{name}_count", f"{name}_sum"} if kind == "histogram" else set()
    charted = {s for p in PANELS for t in p["targets"] for s in re.findall(r"\b(halfmq_[a-z_]+)", t["expr"])}
    charted = {s for s in charted if not s.startswith(SET_SERIES)}  # a set's: test_set_metrics.py
    assert charted and not charted - names, f"charted but not exported: {sorted(charted - names)}"


def test_the_fifo_stall_alert_fires_once_a_head_has_held_its_queue_past_a_minute_and_not_before(tmp_path: Path) -> None:
    """The shipped rule's arithmetic, on synthetic series (promtool's rule tests): quiet at 60 s, firing at 75 s.

    tests/integration/broker/test_fifo_stall_alert.py shows a real broker exporting the series the rule reads."""
    [rule] = [r for g in yaml.safe_load((MONITORING / "rules.yml").read_text())["groups"] for r in g["rules"]
              if r.get("alert") == "HalfmqFifoQueueStalled"]
    summary = (rule["annotations"]["summary"].replace("{{ $labels.consumer_group }}", "billing")
               .replace("{{ $labels.topic }}", "ORDERS").replace("{{ $value }}", "75"))
    firing = {"exp_labels": {"severity": "warning", "consumer_group": "billing", "topic": "ORDERS"},
              "exp_annotations": {"summary": summary}}
    case = {"interval": "15s",
            "input_series": [{"series": 'halfmq_fifo_window_stalled_seconds{consumer_group="billing",topic="ORDERS"}',
                              "values": "0+15x10"}],  # a head held from t=0: the gauge is its age in seconds
            "alert_rule_test": [{"eval_time": "60s", "alertname": "HalfmqFifoQueueStalled", "exp_alerts": []},
                                {"eval_time": "75s", "alertname": "HalfmqFifoQueueStalled", "exp_alerts": [firing]}]}
    (tmp_path / "fifo.yml").write_text(yaml.safe_dump({"rule_files": [str(MONITORING / "rules.yml")],
                                                       "evaluation_interval": "15s", "tests": [case]}))
    tested = promtool("test", "rules", str(tmp_path / "fifo.yml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_disk_alerts_fire_past_each_watermark_and_stop_once_the_disk_is_under_them(tmp_path: Path) -> None:
    """The shipped rules on synthetic series (promtool's rule tests): the level goes 0, 1, 2, 0 every 15 s.

    tests/integration/broker/test_disk_watermarks.py shows a real broker exporting the level past each mark."""
    rules = {r["alert"]: r for g in yaml.safe_load((MONITORING / "rules.yml").read_text())["groups"] for r in g["rules"]
             if r.get("alert") in ("HalfmqDiskPastEarlyDeleteMark", "HalfmqDiskSendsRefused")}

    def firing(alert: str) -> dict:
        return {"exp_labels": {"severity": rules[alert]["labels"]["severity"]},
                "exp_annotations": {"summary": rules[alert]["annotations"]["summary"]}}

    early, refused = "HalfmqDiskPastEarlyDeleteMark", "HalfmqDiskSendsRefused"
    case = {"interval": "15s", "input_series": [{"series": 'halfmq_disk_watermark_level{instance="b"}', "values": "0 1 2 0"}],
            "alert_rule_test": [{"eval_time": "0s", "alertname": early, "exp_alerts": []},
                                {"eval_time": "15s", "alertname": early, "exp_alerts": [firing(early)]},
                                {"eval_time": "15s", "alertname": refused, "exp_alerts": []},
                                {"eval_time": "30s", "alertname": early, "exp_alerts": [firing(early)]},
                                {"eval_time": "30s", "alertname": refused, "exp_alerts": [firing(refused)]},
                                {"eval_time": "45s", "alertname": early, "exp_alerts": []},
                                {"eval_time": "45s", "alertname": refused, "exp_alerts": []}]}
    (tmp_path / "disk.yml").write_text(yaml.safe_dump({"rule_files": [str(MONITORING / "rules.yml")],
                                                       "evaluation_interval": "15s", "tests": [case]}))
    tested = promtool("test", "rules", str(tmp_path / "disk.yml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr
