"""The maintainer experiments: a short prefix of each, rerun, matches the stored results in data/results/.

Training on another CPU can change the last digits, so the comparisons allow a small margin.
"""


import pytest

from course_utils.helpers.exploration_plots import load_result
from course_utils.studies import experiments


def _stored(name):
    if not (experiments.RESULTS / f"{name}.json").is_file():
        pytest.skip(f"data/results/{name}.json not stored yet: python -m course_utils.studies.experiments run {name}")
    return load_result(name)


@pytest.mark.parametrize("name", list(experiments.EXPERIMENTS))
def test_stored_result_names_its_command(name):
    result = _stored(name)
    assert result["experiment"] == name
    assert result["command"] == f"python -m course_utils.studies.experiments run {name}"  # the module that wrote it


def test_every_stored_command_names_a_module_that_exists():  # a maintainer copies it to re-run a study
    import importlib.util
    import json

    for path in sorted(experiments.RESULTS.glob("*.json")):
        command = json.loads(path.read_text(encoding="utf-8")).get("command")
        if command is not None:
            module = command.split()[2]  # "python -m <module> ..."
            assert command.startswith("python -m ") and importlib.util.find_spec(module), (path.name, command)


@pytest.mark.slow  # trains (seconds of CPU): the stored runs are checked in the slow tier
def test_heads_long_prefix():
    stored = _stored("heads_long")["curves"]["1 heads, seed 0"]
    rerun = experiments.heads_long(seeds=(0,), steps={1: 250}, eval_every=250, lrs=())["curves"]["1 heads, seed 0"]
    assert rerun["step"] == stored["step"][:1]
    for key in ("count", "count_beside", "all"):
        assert rerun[key][0] == pytest.approx(stored[key][0], abs=0.03), key


@pytest.mark.slow  # trains (seconds of CPU): the stored runs are checked in the slow tier
def test_longer_training_prefix():
    stored = _stored("longer_training")["runs"]
    long = next(run for run in stored.values() if run["schedule"].endswith("constant lr") and run["seed"] == 0)
    rerun = experiments.longer_training(seeds=(0,), long_epochs=5, short_epochs=0, every=5)["runs"]
    (run,) = rerun.values()
    assert run["epoch"] == [5] and long["epoch"][0] == 5
    for key in ("mirror weight", "weight at +1", "exact accuracy"):
        assert run[key][0] == pytest.approx(long[key][0], abs=0.03), key


@pytest.mark.slow  # trains (seconds of CPU): the stored runs are checked in the slow tier
def test_scaling_sweep_one_run():
    stored = {(r["variant"], r["lr"], r["seed"]): r for r in _stored("scaling_sweep")["runs"]}
    for row in experiments.scaling_sweep(seeds=(0,), lrs=(1e-3,))["runs"]:
        want = stored[row["variant"], row["lr"], row["seed"]]
        assert row["final_accuracy"] == pytest.approx(want["final_accuracy"], abs=0.03)
        if want["steps_to_95"] is None or row["steps_to_95"] is None:
            assert want["steps_to_95"] == row["steps_to_95"] or max(filter(None, (want["steps_to_95"], row["steps_to_95"]))) >= 250
        else:
            assert abs(row["steps_to_95"] - want["steps_to_95"]) <= 30


@pytest.mark.slow  # trains (seconds of CPU): the stored runs are checked in the slow tier
def test_lm_checks_prefix():
    stored = _stored("lm_checks")["text"][0]
    rerun = experiments.lm_checks(seeds=(0,), steps=50, pattern_steps=1)["text"][0]
    assert rerun["step"] == stored["step"][:2]
    assert rerun["held-out loss"] == pytest.approx(stored["held-out loss"][:2], abs=0.05)


def test_cli_lists_experiments(capsys):
    experiments.main(["list"])
    out = capsys.readouterr().out
    assert all(name in out for name in experiments.EXPERIMENTS)


def test_unknown_experiment():
    with pytest.raises(ValueError, match="unknown experiment"):
        experiments.run("nope", write=False)
