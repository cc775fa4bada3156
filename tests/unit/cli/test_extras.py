"""`halfmq` without the extra a command needs: one line naming the extra, exit 2, no traceback."""

from __future__ import annotations

import pytest

from halfmq.cli import extras, main

REQUIRES = ['msgspec>=0.19', 'orjson>=3.9; extra == "broker"', 'uvicorn[standard]>=0.29; extra == "broker"',
            'orjson>=3.9; extra == "services"', 'sqlalchemy>=2.0; extra == "services"', 'psycopg[binary]>=3.1; extra == "services"',
            'rich; extra == "bench"', 'halfmq[broker,services]; extra == "bench"']


def test_each_extra_is_known_by_the_modules_it_installs() -> None:
    modules = extras.extra_modules(REQUIRES)
    assert modules == {"broker": {"orjson", "uvicorn"}, "services": {"orjson", "sqlalchemy", "psycopg"},
                       "bench": {"rich", "orjson", "uvicorn", "sqlalchemy", "psycopg"}}


@pytest.mark.parametrize(("command", "absent", "expected"), [
    ("broker", {"orjson", "uvicorn", "sqlalchemy", "psycopg"}, ["broker"]),  # the SDK alone
    (None, {"orjson", "uvicorn", "sqlalchemy", "psycopg"}, ["broker"]),
    ("up", {"orjson", "uvicorn", "sqlalchemy", "psycopg"}, ["broker", "services"]),
    ("up", {"sqlalchemy", "psycopg"}, ["services"]),  # [broker] without [services]
    ("up", set(), []),
])
def test_the_extras_to_install_are_those_the_command_needs_and_lacks(command: str | None, absent: set[str],
                                                                     expected: list[str]) -> None:
    assert extras.extras_to_install(command, lambda m: m not in absent, REQUIRES) == expected


def lacking(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    monkeypatch.setattr(extras, "find_spec", lambda name: None if name in modules else object())


def test_up_with_only_the_broker_extra_says_to_install_services_and_starts_nothing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    lacking(monkeypatch, "sqlalchemy", "alembic", "psycopg")
    monkeypatch.setattr("halfmq.cli.up_command.cmd_up", lambda args: pytest.fail("started"))
    assert main.main(["up", "--data-dir", "unused"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'halfmq[services]'" in err, err


def test_a_command_whose_import_fails_on_a_missing_extra_says_which_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    lacking(monkeypatch, "orjson", "pydantic", "uvicorn", "fastapi")

    def no_orjson(argv: list[str]) -> int:
        raise ModuleNotFoundError("No module named 'orjson'", name="orjson")

    monkeypatch.setattr(main, "_main", no_orjson)
    assert main.main(["broker"]) == 2
    err = capsys.readouterr().err
    assert err == "halfmq broker needs the broker extra (orjson is missing): pip install 'halfmq[broker]'\n"


def test_a_missing_module_with_every_extra_installed_is_a_bug_and_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    lacking(monkeypatch)

    def typo(argv: list[str]) -> int:
        raise ModuleNotFoundError("No module named 'halfmq.brokr'", name="halfmq.brokr")

    monkeypatch.setattr(main, "_main", typo)
    with pytest.raises(ModuleNotFoundError):
        main.main(["broker"])
