"""Built-in model: answers on Adult rows, their checks, and the results API."""

import json
import os
import select
import signal

import pytest

import cent


def test_refused_rows_get_confirmed_counterfactuals(adult, refused):
    for person in refused:
        results = adult.explain(person, n=3)
        assert 1 <= len(results) <= 3
        for r in results:
            assert r.status == "explained" and r.found
            assert r.target == ">50K" and r.decision == "<=50K"
            assert r.probability >= 0.6
            assert r.changes and r.l0 == len(r.changes)
            for feature, (before, after) in r.changes.items():
                assert str(person[feature]) == before and before != after
            # The counterfactual, given back as a person, is what the model calls favourable.
            again = adult.explain(dict(zip(adult.features, r.values)))
            assert again[0].status == "already_favourable", (r, again)


def test_favourable_row_and_desired(adult, test_frame):
    for i in range(len(test_frame)):
        person = test_frame.iloc[i].to_dict()
        r = adult.explain(person)
        if r[0].status == "already_favourable":
            assert r[0].decision == ">50K" and r[0].changes is None
            asked = adult.explain(person, desired="<=50K", n=1)
            assert asked[0].status == "explained" and asked[0].target == "<=50K"
            return
    pytest.fail("no test row is favourable")


def test_series_and_frame_inputs(adult, test_frame, refused):
    frame = test_frame.iloc[:5]
    results = adult.explain(frame, n=1)
    rows = {r.row for r in results}
    assert rows == set(frame.index)
    one = adult.explain(frame.iloc[0], n=1)
    assert [x.to_dict() for x in one] == [x.to_dict() for x in results if x.row == frame.index[0]]


def test_to_dict_and_to_pandas(adult, refused):
    results = adult.explain(refused[0], n=3)
    d = results[0].to_dict()
    for key in ("status", "changes", "cost", "probability", "target", "reason", "rank"):
        assert key in d
    frame = results.to_pandas()
    assert len(frame) == len(results)
    assert {"status", "rank", "cost", "probability", "changes", "cf_age"} <= set(frame.columns)
    assert list(frame["cf_age"]) == [r.values[adult.features.index("age")] for r in results]


def test_encode_matches_the_split(adult, test_frame):
    x, y = adult.test_rows()
    assert x.shape == (len(test_frame), len(adult.columns)) and len(y) == len(test_frame)
    assert (adult.encode(test_frame.iloc[:50]) == x[:50]).all()
    assert isinstance(cent.CentError("x"), ValueError)


def test_single_moves_can_be_left_out_and_survive_pickling(cache, refused):
    import pickle

    plain = cent.Explainer("adult", model="mlp", seed=1, cache=cache, single_moves=False)
    again = pickle.loads(pickle.dumps(plain))
    for person in refused:
        results = plain.explain(person, n=3)
        assert all(r.realization != "single_move" for r in results), results
        assert [r.values for r in again.explain(person, n=3)] == [r.values for r in results]
    with pytest.raises(TypeError):
        cent.Explainer("adult", model="mlp", seed=1, cache=cache, single_move=False)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_explains_as_its_parent(adult, refused):
    """A process forked after queries (a `multiprocessing` worker) has none of the parent's
    helper threads; its queries still end, with the parent's answers."""
    person = refused[0]
    expected = json.loads(json.dumps([r.values for r in adult.explain(person, n=3)]))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.write(write, json.dumps([r.values for r in adult.explain(person, n=3)]).encode())
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 120)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked process's query did not end within 120 s")
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    assert data, "the forked process gave no answer"
    assert json.loads(data) == expected
