"""The base of the services' domain errors: the service layer raises them, only the entrypoint speaks HTTP."""

from __future__ import annotations

from typing import ClassVar


class ServiceError(Exception):
    """A refusal of a service's domain, with a stable ``code`` and whether retrying can help.

    Why no HTTP status here: the status is the entrypoint's choice (each service's
    ``routes.PROBLEM_STATUS``), so the same error can serve a consumer that never answers HTTP.
    """

    code: ClassVar[str] = "SERVICE_ERROR"
    retriable: ClassVar[bool] = False

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
