"""The eos gates compare the transactional copy with the at-least-once copy of the same run."""

from halfmq.bench.gates import evaluate


def _doc(eos: float, alo: float) -> dict:
    case = lambda v: {"ops_per_s": {"median": v, "min": v, "max": v}}  # noqa: E731
    return {"settings": {"quick": False}, "baselines": {}, "scenarios": {"eos": {"status": "ok", "cases": {
        "eos_batch10": case(eos), "at_least_once_batch10": case(alo), "eos_batch100": case(eos), "at_least_once_batch100": case(alo)}}}}


def test_a_transactional_copy_at_half_the_at_least_once_rate_meets_the_gate_and_below_misses_it() -> None:
    met = {g["id"]: g for g in evaluate(_doc(eos=500, alo=1000))}
    assert met["eos_batch10"]["status"] == met["eos_batch100"]["status"] == "met"
    assert met["eos_batch10"]["target"] == 500
    missed = {g["id"]: g for g in evaluate(_doc(eos=499, alo=1000))}
    assert missed["eos_batch10"]["status"] == "missed"


def test_without_the_eos_scenario_the_gate_is_unknown() -> None:
    gates = {g["id"]: g for g in evaluate({"settings": {}, "baselines": {}, "scenarios": {}})}
    assert gates["eos_batch100"]["status"] == "unknown"
