"""Both services' settings come from one base: the shared knobs read under each service's own prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.services.credit.config import CreditSettings
from halfmq.services.order.config import OrderSettings
from halfmq.services.settings_base import ServiceSettings


@pytest.mark.parametrize(("cls", "prefix", "port"), [(OrderSettings, "ORDER_", 8001), (CreditSettings, "CREDIT_", 8002)])
def test_each_service_reads_the_shared_settings_under_its_prefix(monkeypatch, cls, prefix, port, tmp_path: Path) -> None:
    assert set(ServiceSettings.model_fields) <= set(cls.model_fields)
    assert cls().port == port
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    monkeypatch.setenv(f"{prefix}BROKER_TOKEN_FILE", str(token))
    monkeypatch.setenv(f"{prefix}WRITE_BATCH_MAX", "8")
    monkeypatch.setenv("OTHER_WRITE_BATCH_MAX", "99")
    settings = cls()
    assert (settings.write_batch_max, settings.broker_token_value(), settings.broker_verify()) == (8, "s3cret", None)
