"""Names an attacker chose (issue 30, item 4): what a name must never be, for the validator, the API and the console."""

from __future__ import annotations


def steering_name(victim_transaction_id: str) -> str:
    """A name that, pasted raw into ``/console/transactional-ids/{name}/abort``, makes Chromium post the victim's rollback.

    Chromium turns ``\\`` into ``/``, resolves ``..`` and drops ``#…``: the button posts
    ``/console/transactions/<victim>/rollback``.
    """
    return f"..\\transactions\\{victim_transaction_id}\\rollback#"


CRAFTED = {
    "markup": "<img src=x onerror=alert(1)>",
    "space": "order copier",
    "right-to-left override": "copier\u202egpj.exe",
    "percent-encoded NUL": "copier%00",
    "NUL": "copier\x00",
    "newline": "copier\n",
    "5,000 characters": "x" * 5000,
    "dot segment": "..",
    "query and fragment": "copier?x=1#y",
    "full-width digits": "copier\uff11",
    "steering": steering_name("C0A8000100002A9F0000000000000000"),
    "empty": "",
}
