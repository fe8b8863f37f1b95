"""Bad input raises cent.CentError with the message the CLI prints for the same input."""

import numpy as np
import pytest

import cent
from conftest import cli_explain, run_cli


def python_message(fn):
    with pytest.raises(cent.CentError) as info:
        fn()
    assert isinstance(info.value, ValueError)
    return str(info.value)


@pytest.mark.parametrize(
    "change",
    [
        {"age": 500},
        {"workclass": "Astronaut"},
        {"agee": 40},
        {"hours-per-week": "many"},
        {"education-num": 9.5},
    ],
    ids=["out-of-range", "unknown-category", "unknown-feature", "not-a-number", "not-an-integer"],
)
def test_bad_row_matches_cli(adult, refused, cent_bin, cache, tmp_path, change):
    person = dict(refused[0])
    if "agee" in change:
        person.pop("age")
    person.update(change)
    message = python_message(lambda: adult.explain(person))
    code, answer, _ = cli_explain(cent_bin, cache, tmp_path, person)
    assert code == 1
    assert answer["error"] == message


def test_missing_feature_and_null(adult, refused, cent_bin, cache, tmp_path):
    person = {k: v for k, v in refused[0].items() if k not in ("sex", "race")}
    message = python_message(lambda: adult.explain(person))
    assert message == "missing feature(s): race, sex"
    assert cli_explain(cent_bin, cache, tmp_path, person)[1]["error"] == message
    person = dict(refused[0], age=None)
    message = python_message(lambda: adult.explain(person))
    assert cli_explain(cent_bin, cache, tmp_path, person)[1]["error"] == message


@pytest.mark.parametrize(
    "kwargs, flags",
    [
        ({"immutable": ["agee"]}, ["--immutable", "agee"]),
        ({"immutable": ["age"], "free": ["age"]}, ["--immutable", "age", "--free", "age"]),
        ({"increase_only": ["occupation"]}, ["--increase-only", "occupation"]),
        ({"cost": {"age": -1}}, ["--cost", "age=-1"]),
        ({"desired": "rich"}, ["--desired", "rich"]),
    ],
    ids=["unknown-feature", "two-lists", "unordered-direction", "bad-cost", "unknown-class"],
)
def test_bad_constraints_match_cli(adult, refused, cent_bin, cache, tmp_path, kwargs, flags):
    message = python_message(lambda: adult.explain(refused[0], **kwargs))
    query = tmp_path / "q.json"
    query.write_text("{}")
    code, _, err = run_cli(cent_bin, cache, "explain", "--dataset", "adult", "--query", str(query), *flags)
    assert code == 2
    cli = err.strip().removeprefix("error: ")
    # The same message, with the argument's name where the CLI names its flag.
    for name in ("immutable", "increase-only", "decrease-only", "free", "cost", "desired"):
        cli = cli.replace(f"--{name}", name.replace("-", "_"))
    assert message == cli


def test_unknown_dataset_and_schema_match_cli(cent_bin, cache, tmp_path):
    message = python_message(lambda: cent.Explainer("adulte", cache=cache))
    code, _, err = run_cli(cent_bin, cache, "train", "--dataset", "adulte")
    assert code == 2 and err.strip() == f"error: {message}"
    missing = tmp_path / "nope.toml"
    message = python_message(lambda: cent.Explainer(schema=missing, cache=cache))
    code, _, err = run_cli(cent_bin, cache, "train", "--schema", str(missing))
    assert code == 1 and err.strip() == f"error: {message}"


def test_onnx_mismatch_matches_cli(cent_bin, cache):
    from conftest import REPO

    wrong = REPO / "data" / "onnx" / "skl-lr.onnx"  # a 5-feature toy model, not Adult's width
    assert wrong.is_file()
    message = python_message(lambda: cent.Explainer("adult", model=str(wrong), cache=cache))
    assert str(wrong) in message
    code, _, err = run_cli(cent_bin, cache, "explain", "--dataset", "adult", "--row", "0", "--onnx", str(wrong))
    assert code == 1 and err.strip() == f"error: {message}"


class Raising:
    def __init__(self, after):
        self.after, self.calls = after, 0

    def predict_proba(self, x):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("the scoring service is down")
        return np.tile([0.9, 0.1], (len(x), 1))


class WrongShape:
    def predict_proba(self, x):
        return np.zeros((len(x), 3))


def test_model_failures_are_errors(cache, refused):
    message = python_message(lambda: cent.Explainer("adult", model=WrongShape(), cache=cache))
    assert "predict_proba returned an array of shape [" in message and "expected [" in message
    message = python_message(lambda: cent.Explainer("adult", model=object(), cache=cache))
    assert "has no predict_proba" in message
    explainer = cent.Explainer("adult", model=Raising(after=1), cache=cache)
    message = python_message(lambda: explainer.explain(refused[0]))
    assert "RuntimeError: the scoring service is down" in message and "the model Raising failed" in message


def test_bad_arguments(adult, refused):
    assert python_message(lambda: adult.explain(refused[0], n=0)) == "n 0: must be at least 1"
    assert "must be between 0 and 1" in python_message(lambda: adult.explain(refused[0], min_probability=2))
    assert "unknown model `svm`" in python_message(lambda: cent.Explainer("adult", model="svm"))
    assert python_message(lambda: adult.explain(42)).startswith("rows are a DataFrame")
