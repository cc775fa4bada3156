"""Request and response bodies of the order API."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .rules import MAX_AMOUNT, written_in_ascii


class OrderCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.@:-]+$")
    amount: Decimal = Field(gt=0, le=MAX_AMOUNT)

    @field_validator("amount", mode="before")
    @classmethod
    def _ascii_digits(cls, value: object) -> object:
        if not written_in_ascii(value):
            raise ValueError("amount must be written with ASCII digits")
        return value

    @field_validator("amount")
    @classmethod
    def _two_decimals(cls, value: Decimal) -> Decimal:
        if not value.is_finite():
            raise ValueError("amount must be a finite number")
        if value != value.quantize(Decimal("0.01")):
            raise ValueError("amount has at most 2 decimal places")
        return value.quantize(Decimal("0.01"))


MessageState = Literal["committed", "pending_check"]
