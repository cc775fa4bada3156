"""`halfmq bench peers`: the catalogue of peer runners and the exact command lines it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.bench import peers
from halfmq.bench.peer_command import BY_NAME, PEERS, RUNNERS, argv, selected


def test_every_peer_script_ships_in_the_runners_package() -> None:
    for peer in PEERS:
        assert (RUNNERS / peer.script).is_file(), peer.script
    assert (RUNNERS / "setup.sh").is_file()


def test_the_sizes_are_passed_only_to_scripts_that_take_them() -> None:
    venv = Path("/v")
    redis = argv(BY_NAME["redis_always"], seconds=2, reps=1, venv=venv)
    assert redis == ["/v/bin/python", str(RUNNERS / "redis_bench.py"), "--fsync", "always", "--seconds", "2", "--reps", "1"]
    spark = argv(BY_NAME["spark"], seconds=2, reps=1, venv=venv)
    assert "--seconds" not in spark and spark[-2:] == ["--reps", "1"]
    sweep = argv(BY_NAME["httpx_sweep"], seconds=2, reps=1, venv=venv)
    assert "--reps" not in sweep and sweep[-2:] == ["--seconds", "2"]


def test_nats_peers_run_the_venvs_nats_server_which_supports_sync_always() -> None:
    r3 = argv(BY_NAME["nats_jetstream_r3"], seconds=None, reps=None, venv=Path("/v"))
    assert r3[2:] == ["--server-bin", "/v/bin/nats-server"]


def test_without_names_every_peer_but_the_contrasts_runs_and_an_unknown_name_is_refused() -> None:
    names = [p.name for p in selected([])]
    assert {"redis_always", "nats_2_15_syncalways", "nats_jetstream_r3", "rabbitmq_classic", "outbox", "fsync", "http", "spark"} <= set(names)
    assert "redis_everysec" not in names
    assert [p.name for p in selected(["redis_everysec", "fsync"])] == ["fsync", "redis_everysec"]
    with pytest.raises(SystemExit, match="unknown peer"):
        selected(["kafka"])


def test_the_report_shows_the_command_a_result_was_produced_by(tmp_path: Path) -> None:
    (tmp_path / "redis_always.cmd").write_text("python redis_bench.py --seconds 3\n")
    commands = peers.commands(tmp_path)
    assert commands["redis_always"] == "python redis_bench.py --seconds 3"
    assert "nats_r3_bench.py" in commands["nats_jetstream_r3"]  # not run: the catalogue's command
    assert "redis_everysec" not in commands
