"""Same person, options and seed: the same answers as the `cent` command, and a pickled
explainer gives the same answers as the original."""

import json
import pickle

import pandas as pd
import pytest

import cent
from conftest import REPO, cli_explain, run_cli


def test_explain_matches_cli(adult, refused, test_frame, cent_bin, cache, tmp_path):
    people = refused[:4] + [test_frame.iloc[i].to_dict() for i in range(4)]
    for person in people:
        code, cli, _ = cli_explain(cent_bin, cache, tmp_path, person)
        results = adult.explain(person)
        assert cli["decision"]["name"] == results[0].decision
        if cli.get("already_favourable"):
            assert code == 0 and results[0].status == "already_favourable"
        else:
            assert results[0].explanation == cli["explanation"]


def test_explain_with_flags_matches_cli(adult, refused, cent_bin, cache, tmp_path):
    flags = ["--n", "2", "--immutable", "capital-gain,capital-loss", "--increase-only", "hours-per-week",
             "--cost", "education-num=2", "--min-probability", "0.7"]
    for person in refused[:3]:
        _, cli, _ = cli_explain(cent_bin, cache, tmp_path, person, *flags)
        results = adult.explain(person, n=2, immutable=["capital-gain", "capital-loss"],
                                increase_only=["hours-per-week"], cost={"education-num": 2}, min_probability=0.7)
        if "explanation" in cli:
            assert results[0].explanation == cli["explanation"]
        else:
            assert results[0].reason == cli["not_found"]


def test_batch_matches_cli(adult, test_frame, cent_bin, cache, tmp_path):
    people = tmp_path / "people.csv"
    test_frame.iloc[:60].to_csv(people, index=False)
    for ext in ("csv", "jsonl"):
        ours, theirs = tmp_path / f"py.{ext}", tmp_path / f"cli.{ext}"
        summary = adult.batch(people, out=ours, threads=2)
        assert summary["rows"] == 60 and summary["errors"] == 0
        code, _, err = run_cli(cent_bin, cache, "batch", "--dataset", "adult", "--input", str(people),
                               "--out", str(theirs), "--threads", "1")
        assert code == 0, err
        assert ours.read_bytes() == theirs.read_bytes()
    frame = adult.batch(test_frame.iloc[:60], threads=2)
    assert frame.equals(pd.read_csv(tmp_path / "cli.csv", dtype={"reason": str, "changes": str},
                                    keep_default_na=False, na_values=[""]))
    # An identifier column is ignored and named in the summary; the answers are the same.
    tagged = test_frame.iloc[:60].assign(applicant=[f"a{i}" for i in range(60)])
    summary = adult.batch(tagged, out=tmp_path / "tagged.jsonl", threads=2)
    assert summary["ignored_columns"] == ["applicant"]
    assert (tmp_path / "tagged.jsonl").read_bytes() == (tmp_path / "py.jsonl").read_bytes()
    # ... or carried into the results to join them on.
    kept = adult.batch(tagged, threads=2, keep="applicant")
    assert list(kept.columns[:3]) == ["line", "applicant", "status"]
    assert kept["applicant"].tolist() == [f"a{line - 2}" for line in kept["line"]]
    assert kept.drop(columns="applicant").equals(frame)
    # A feature the DataFrame lacks is named at once, the DataFrame's column close to it too.
    with pytest.raises(cent.CentError, match=r"^the DataFrame's columns: missing feature\(s\): sex \(`sexx` is given"):
        adult.batch(test_frame.iloc[:5].rename(columns={"sex": "sexx"}))
    with pytest.raises(cent.CentError, match="no column `nobody`"):
        adult.batch(test_frame.iloc[:5], keep="nobody")
    tagged_one, plain_one = adult.explain(dict(tagged.iloc[0])), adult.explain(dict(test_frame.iloc[0]))
    assert [r.to_dict() for r in tagged_one] == [r.to_dict() for r in plain_one]


def test_onnx_and_schema_match_cli(cent_bin, cache, tmp_path):
    schema, model = REPO / "data" / "onnx" / "trees.toml", REPO / "data" / "onnx" / "lightgbm.onnx"
    explainer = cent.Explainer(schema=schema, model=str(model), cache=cache)
    frame = pd.read_csv(REPO / "data" / "onnx" / "trees.csv").iloc[:40]
    people, ours, theirs = tmp_path / "people.csv", tmp_path / "py.jsonl", tmp_path / "cli.jsonl"
    frame.to_csv(people, index=False)
    explainer.batch(frame, out=ours)
    code, _, err = run_cli(cent_bin, cache, "batch", "--schema", str(schema), "--onnx", str(model),
                           "--input", str(people), "--out", str(theirs))
    assert code in (0, 3), err
    assert ours.read_bytes() == theirs.read_bytes()
    lines = [json.loads(l) for l in ours.read_text().splitlines()]
    assert any("explanation" in l for l in lines)


def test_pickle_round_trip(adult, refused):
    again = pickle.loads(pickle.dumps(adult))
    assert again.columns == adult.columns
    for person in refused[:3]:
        a = [r.to_dict() for r in adult.explain(person)]
        b = [r.to_dict() for r in again.explain(person)]
        assert a == b


def test_pickle_with_python_model_and_frame(adult, refused, cache):
    from sklearn.linear_model import LogisticRegression

    x, y = adult.training_rows()
    clf = LogisticRegression(max_iter=300).fit(x, y)
    explainer = cent.Explainer("adult", model=clf, cache=cache)
    again = pickle.loads(pickle.dumps(explainer))
    for person in refused[:3]:
        assert [r.to_dict() for r in explainer.explain(person)] == [r.to_dict() for r in again.explain(person)]

    schema = REPO / "data" / "onnx" / "trees.toml"
    frame = pd.read_csv(REPO / "data" / "onnx" / "trees.csv")
    built = cent.Explainer(schema=schema, data=frame, model="lr", cache=cache)
    copy = pickle.loads(pickle.dumps(built))
    people = frame.drop(columns=[built._core.target]).iloc[:10]
    assert [r.to_dict() for r in built.explain(people)] == [r.to_dict() for r in copy.explain(people)]
