"""`halfmq admin` edits the auth file; a running broker picks the change up without a restart."""

from __future__ import annotations

import subprocess

import httpx

from tests.support.processes import ROOT, halfmq_command
from tests.support.waiting import wait_for


def admin(*args: str) -> str:
    done = subprocess.run(halfmq_command("admin", *args), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_token_made_by_admin_works_at_once_and_stops_working_when_revoked(start_broker, tmp_path) -> None:
    admin("init", str(tmp_path / "auth"))
    auth_file = str(tmp_path / "auth" / "auth.json")
    broker = start_broker({"HALFMQ_BROKER_AUTH_FILE": auth_file})
    admin("users", "add", "payments", "--actions", "publish", "--resources", "topic:PAY_*", "--auth-file", auth_file)
    token = admin("tokens", "create", "payments", "--auth-file", auth_file)
    assert token.startswith("hmq_") and token not in (tmp_path / "auth" / "auth.json").read_text()
    headers = {"authorization": f"Bearer {token}"}

    def send(topic: str) -> int:
        return httpx.post(f"{broker.url}/v1/topics/{topic}/messages", json={"messages": [{"body": "x"}]}, headers=headers).status_code

    wait_for(lambda: send("PAY_EU") == 200, timeout=15)
    assert send("ORDER_TOPIC") == 403
    assert "payments\t1 token(s)\tpublish on topic:PAY_*" in admin("users", "list", "--auth-file", auth_file)
    admin("tokens", "revoke", "payments", "--all", "--auth-file", auth_file)
    wait_for(lambda: send("PAY_EU") == 401, timeout=15)
