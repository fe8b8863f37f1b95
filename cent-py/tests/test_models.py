"""Python models as the black box: each counterfactual is confirmed by the model's own
predict_proba on the encoded counterfactual."""

from pathlib import Path

import numpy as np
import pytest

import cent


def check_confirmed(explainer, model, rows, favourable_index):
    explained = 0
    for person in rows:
        p = model.predict_proba(explainer.encode(person))[0]
        if p.argmax() == favourable_index:
            continue
        results = explainer.explain(person, n=3)
        for r in results:
            assert r.status == "explained", r
            x = explainer.encode(dict(zip(explainer.features, r.values)))
            q = model.predict_proba(x)[0]
            assert q.argmax() == favourable_index and q[favourable_index] >= 0.6 - 1e-6, (r, q)
            assert abs(q[favourable_index] - r.probability) < 1e-4
            explained += 1
    assert explained >= 5, "too few refused rows were explained to judge"


@pytest.fixture(scope="module")
def data(adult):
    x, y = adult.training_rows()
    return x, y


def test_sklearn_mlp(adult, data, test_frame, cache):
    from sklearn.neural_network import MLPClassifier

    x, y = data
    clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=60, random_state=0).fit(x, y)
    explainer = cent.Explainer("adult", model=clf, seed=1, cache=cache)
    rows = [test_frame.iloc[i].to_dict() for i in range(40)]
    check_confirmed(explainer, clf, rows, adult.classes.index(">50K"))


def test_lightgbm(adult, data, test_frame, cache):
    import lightgbm

    x, y = data
    clf = lightgbm.LGBMClassifier(n_estimators=60, num_leaves=15, random_state=0, verbose=-1).fit(x, y)
    explainer = cent.Explainer("adult", model=clf, seed=1, cache=cache)
    rows = [test_frame.iloc[i].to_dict() for i in range(40)]
    check_confirmed(explainer, clf, rows, adult.classes.index(">50K"))


class Counting:
    """A model that counts its calls and the rows it was given."""

    def __init__(self, inner):
        self.inner, self.calls, self.shapes = inner, 0, []

    def predict_proba(self, x):
        assert x.dtype == np.float64 and x.ndim == 2
        self.calls += 1
        self.shapes.append(x.shape)
        return self.inner.predict_proba(x)


def test_batched_calls(adult, data, refused, cache):
    from sklearn.linear_model import LogisticRegression

    x, y = data
    model = Counting(LogisticRegression(max_iter=300).fit(x, y))
    explainer = cent.Explainer("adult", model=model, seed=1, cache=cache)
    assert model.shapes[0] == (len(x), len(adult.columns))  # the pool, labelled in one call
    before = model.calls
    explainer.explain(refused[0], n=3)
    per_query = model.calls - before
    rows = sum(s[0] for s in model.shapes[before:])
    assert 1 <= per_query < rows, (per_query, rows)  # batches, not one call per row


class FirstColumn:
    """Favourable when the first encoded column is above one half."""

    def predict_proba(self, x):
        p = 1.0 / (1.0 + np.exp(-8.0 * (x[:, :1] - 0.5)))
        return np.hstack([1.0 - p, p])


def test_own_model_trains_no_builtin(tmp_path):
    """A Python or ONNX model replaces the built-in one: only the VAE is trained and cached."""
    fixtures = Path(__file__).resolve().parents[2] / "data" / "onnx"
    for model in (FirstColumn(), str(fixtures / "skl-rf.onnx")):
        cache = tmp_path / type(model).__name__
        explainer = cent.Explainer(schema=str(fixtures / "trees.toml"), model=model, seed=1, cache=str(cache))
        assert explainer.features[0] == "x0"
        assert sorted(p.name for p in (cache / "models").iterdir()) == ["trees-vae-seed1.json"]


def test_encoded_split_is_the_explainers_rows_without_a_model(adult, tmp_path):
    """``cent.encoded_split`` gives the rows and classes an Explainer of the same data and seed
    has, loading the data only: the cache it is given stays without models."""
    for split, (x, y) in (("train", adult.training_rows()), ("test", adult.test_rows())):
        frame = cent.encoded_split("adult", split=split, seed=1, cache=str(tmp_path))
        assert list(frame.columns) == adult.columns + ["income"]
        assert np.array_equal(frame[adult.columns].to_numpy(np.float64), x)
        assert np.array_equal(frame["income"].to_numpy(), y)
    assert not (tmp_path / "models").exists()
    with pytest.raises(cent.CentError, match="unknown split `dev`"):
        cent.encoded_split("adult", split="dev", cache=str(tmp_path))
