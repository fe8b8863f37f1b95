"""A device's answers (`Explainer.explain_on_device`): the same as `cent explain --bundle`, each
judged by the model; the device's options and seeds; bad options and files named."""

import pytest

import cent
from conftest import cli_explain, run_cli


@pytest.fixture(scope="session")
def bundle(cent_bin, cache, tmp_path_factory):
    """The Adult MLP bundle `cent export` writes at its defaults."""
    path = tmp_path_factory.mktemp("device") / "adult.cent"
    code, _, err = run_cli(cent_bin, cache, "export", "--dataset", "adult", "--model", "mlp", "--out", str(path))
    assert code == 0, err
    return str(path)


def test_device_answers_match_cli(adult, refused, bundle, cent_bin, cache, tmp_path):
    shown = 0
    for person in refused[:4]:
        code, cli, err = cli_explain(cent_bin, cache, tmp_path, person, "--bundle", bundle)
        results = adult.explain_on_device(person, bundle)
        assert results[0].explanation == cli["device"], err
        for r, a in zip(results, cli["device"]["answers"]):
            assert r.status == ("explained" if a["confirmed"] else "unconfirmed")
            assert r.found == a["confirmed"] and r.probability == a["model"]["probability"]
            assert r.realization in ("region", "person") and r.l0 == len(r.changes)
            for feature, (before, after) in r.changes.items():
                assert str(person[feature]) == before and before != after
            shown += 1
    assert shown > 0


def test_seed_and_options_reach_the_device(adult, test_frame, bundle, cent_bin, cache):
    import json

    for i in range(3):
        person = test_frame.iloc[i].to_dict()
        code, out, err = run_cli(cent_bin, cache, "explain", "--dataset", "adult", "--row", str(i), "--bundle", bundle,
                                 "--format", "json", "--n", "2", "--lead", "0.6")
        cli = json.loads(out)
        results = adult.explain_on_device(person, bundle, n=2, seed=i, lead=0.6)
        if cli.get("already_favourable"):
            assert results[0].status == "already_favourable"
            continue
        assert results[0].explanation == cli["device"], err
        assert results[0].explanation["seed"] == i and results[0].explanation["options"]["lead"] == 0.6
    # Without a seed, each row's position in the frame seeds it, as a query file's position does.
    frame = test_frame.iloc[:3]
    by_position = adult.explain_on_device(frame, bundle, n=1)
    assert {r.explanation["seed"] for r in by_position if r.explanation} <= {0, 1, 2}


def test_bad_requests_are_named(adult, refused, bundle, tmp_path):
    person = refused[0]
    with pytest.raises(cent.CentError, match="n 4: a device gives 1 to 3"):
        adult.explain_on_device(person, bundle, n=4)
    with pytest.raises(cent.CentError, match="device option `speed`: unknown"):
        adult.explain_on_device(person, bundle, speed=2)
    with pytest.raises(cent.CentError, match="device option `candidates`: 9 is not a whole number from 1 to 8"):
        adult.explain_on_device(person, bundle, candidates=9)
    junk = tmp_path / "junk.cent"
    junk.write_bytes(b"not a bundle")
    with pytest.raises(cent.CentError, match="junk.cent: not a valid bundle"):
        adult.explain_on_device(person, junk)
