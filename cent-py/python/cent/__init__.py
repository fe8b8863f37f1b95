"""cent: counterfactual explanations (CEnt) for any classifier.

"What is the smallest feasible change that would flip this decision?" An :class:`Explainer`
loads a dataset (a built-in one such as ``"adult"``, or a TOML schema with a CSV or a pandas
DataFrame), its cached models, and a black box: the built-in ``"mlp"`` or ``"lr"``, an ONNX
file, or any Python object with ``predict_proba``. It runs the same library code as the
``cent`` command, so the same person, options and seed give the same answers.

A Python model is called with the *encoded* rows that cent's own classifiers see: a 2-D
``float64`` numpy array with one column per name of :attr:`Explainer.columns` (numbers scaled to
[0, 1], one-hot categories). Train it on :func:`encoded_split` (no model needed),
:meth:`Explainer.training_rows` or :meth:`Explainer.encode` of your own frame.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any, Iterable, Mapping

import numpy as np

from ._cent import CentError, Core, draft_schema as _draft_schema, encoded_split as _encoded_split

__all__ = ["CentError", "Explainer", "Result", "Results", "draft_schema", "encoded_split"]

_NUMERIC = {"continuous", "integer"}


def _text(name: str, value: Any) -> str:
    """A raw value as the text a query file would hold (as `cent explain --query` reads JSON)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        raise CentError(f"feature `{name}`: expected a number or a string, found null")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)


def _fields(row: Any) -> list[tuple[str, str]]:
    """Named fields of one person: a mapping (dict, pandas Series) of feature to raw value."""
    if hasattr(row, "items"):
        return [(str(k), _text(str(k), v)) for k, v in row.items()]
    raise CentError(f"a row is a dict or a pandas Series of feature values, not {type(row).__name__}")


def _rows(rows: Any) -> list[tuple[Any, list[tuple[str, str]]]]:
    """(label, fields) of each person in a DataFrame, a list of mappings, or one mapping."""
    if hasattr(rows, "iterrows"):
        return [(label, _fields(r)) for label, r in rows.iterrows()]
    if isinstance(rows, Mapping) or hasattr(rows, "items"):
        return [(0, _fields(rows))]
    if isinstance(rows, Iterable) and not isinstance(rows, (str, bytes)):
        return [(i, _fields(r)) for i, r in enumerate(rows)]
    raise CentError(f"rows are a DataFrame, a dict or a list of dicts, not {type(rows).__name__}")


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _cost(cost: Mapping[str, float] | None) -> list[str]:
    if cost is None:
        return []
    return [f"{k}={_text(k, v)}" for k, v in dict(cost).items()]


def _options(n, desired, immutable, increase_only, decrease_only, free, cost, min_probability) -> tuple:
    """The per-request arguments of the native explain and batch, as the one tuple they take."""
    return (
        int(n), None if desired is None else str(desired), _names(immutable), _names(increase_only),
        _names(decrease_only), _names(free), _cost(cost), None if min_probability is None else float(min_probability),
    )


class Result:
    """One answer for one person: a counterfactual, or why there is none.

    ``status`` is ``"explained"``, ``"already_favourable"`` or ``"not_found"`` (then ``reason``
    says why); a device's answer the model does not confirm is ``"unconfirmed"``
    (:meth:`Explainer.explain_on_device`). For a counterfactual: ``rank`` (1 is best), ``target`` (the class it reaches) and
    ``probability`` (the model's for it), ``cost``, ``l0`` (features changed), ``changes``
    (feature to ``(before, after)``, as the CLI prints them), ``values`` (every feature's value
    after the change), ``realization`` and ``agreement``. ``explanation`` is the whole
    explanation as ``cent explain --format json`` gives it.
    """

    __slots__ = (
        "row", "status", "reason", "decision", "decision_probability", "rank", "target",
        "probability", "cost", "l0", "realization", "agreement", "changes", "values", "explanation",
    )

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, fields.get(name))

    @property
    def found(self) -> bool:
        """Whether this result is a counterfactual."""
        return self.status == "explained"

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (``explanation`` left out: it is shared by a person's answers)."""
        return {name: getattr(self, name) for name in self.__slots__ if name != "explanation"}

    def __repr__(self) -> str:
        if self.status != "explained":
            why = f": {self.reason}" if self.reason else ""
            return f"Result(row={self.row!r}, {self.status}{why})"
        moves = ", ".join(f"{f}: {a} -> {b}" for f, (a, b) in self.changes.items())
        return f"Result(row={self.row!r}, rank={self.rank}, {moves}; {self.target} p={self.probability:.2f}, cost={self.cost:.3f})"


class Results(list):
    """A list of :class:`Result` with :meth:`to_pandas`; ``features`` names the values of
    each result's ``values``."""

    features: list[str] = []

    def to_pandas(self, features: list[str] | None = None):
        """One row per result: the fields of :meth:`Result.to_dict`, ``changes`` as text
        (``age: 38 -> 41; ...``) and a ``cf_<feature>`` column per feature."""
        import pandas as pd

        records = []
        for r in self:
            d = r.to_dict()
            changes = d.pop("changes") or {}
            values = d.pop("values") or []
            d["changes"] = "; ".join(f"{f}: {a} -> {b}" for f, (a, b) in changes.items())
            for name, value in zip(features or self.features, values):
                d[f"cf_{name}"] = value
            records.append(d)
        return pd.DataFrame.from_records(records)


class Explainer:
    """CEnt over one dataset and one black box.

    ``dataset`` names a built-in dataset (``"adult"``, ``"adult-wide"``, ``"compas"``, ...);
    or ``schema`` is a TOML schema file with ``data`` a CSV path, a pandas DataFrame, or None
    (the schema's own source). ``model`` is ``"mlp"``, ``"lr"``, a path to an ``.onnx`` file, or
    an object with ``predict_proba`` (called with encoded rows, see the module's doc). ``seed``
    seeds the split, training and the explainer (the CLI's ``--seed``); ``cache`` is where
    datasets and trained models are kept (default: ``$CENT_CACHE``, else ``data/cache``).
    ``k``, ``max_search``, ``widen`` and ``plausibility`` are the CLI's options of those names;
    ``single_moves=False`` is its ``--no-single-moves`` (no single feature, or linked group,
    moved alone competes with the regions' answers).

    Pickling stores these arguments (a DataFrame and a Python model are pickled with them);
    unpickling rebuilds the explainer from the cache, with identical results.
    """

    def __init__(
        self,
        dataset: str | None = None,
        *,
        schema: str | os.PathLike | None = None,
        data: Any = None,
        model: Any = "mlp",
        seed: int = 1,
        cache: str | os.PathLike | None = None,
        k: int = 1000,
        max_search: int = 50,
        widen: int = 1,
        plausibility: float = 0.52,
        single_moves: bool = True,
    ) -> None:
        schema, cache = _paths(dataset, schema, cache)
        self._args = dict(
            dataset=dataset, schema=schema, data=data, model=model, seed=seed, cache=cache,
            k=k, max_search=max_search, widen=widen, plausibility=plausibility, single_moves=single_moves,
        )
        kind, onnx, python = "mlp", None, None
        if isinstance(model, (str, os.PathLike)):
            text = os.fspath(model)
            if text.lower().endswith(".onnx"):
                onnx = os.path.abspath(text)
            else:
                kind = text
        else:
            python = model
        csv, frame_file = _data_file(data)
        try:
            self._core = Core(
                dataset, schema, csv, kind, onnx, python, int(seed), cache,
                int(k), int(max_search), int(widen), float(plausibility), bool(single_moves),
            )
        finally:
            if frame_file is not None:
                os.unlink(frame_file)

    def __reduce__(self):
        return (_rebuild, (self._args,))

    # What the data looks like.

    @property
    def dataset(self) -> str:
        return self._core.dataset

    @property
    def features(self) -> list[str]:
        """The logical features, in the schema's order."""
        return [name for name, _ in self._core.features]

    @property
    def columns(self) -> list[str]:
        """The encoded columns a Python model is given: ``feature`` or ``feature=category``."""
        return list(self._core.columns)

    @property
    def classes(self) -> list[str]:
        return list(self._core.classes)

    @property
    def favourable(self) -> str:
        """The schema's favourable class."""
        return self._core.classes[self._core.favourable]

    def encode(self, rows: Any) -> np.ndarray:
        """Encoded rows (``float64``, one column per :attr:`columns` name) of a DataFrame, a
        dict or a list of dicts of raw feature values: what a Python model is given."""
        data, n = self._core.encode([f for _, f in _rows(rows)])
        return np.frombuffer(data, dtype=np.float32).reshape(n, len(self._core.columns)).astype(np.float64)

    def training_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The encoded training split and its labels (class indices): what to train a model on."""
        return self._split("train")

    def test_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The encoded test split and its labels (the CLI's ``--row`` indexes this split)."""
        return self._split("test")

    def test_frame(self):
        """The test split as a DataFrame of raw values (numbers as numbers, categories as text)."""
        return self._frame("test")

    def _split(self, which: str) -> tuple[np.ndarray, np.ndarray]:
        data, n, labels = self._core.split(which)
        x = np.frombuffer(data, dtype=np.float32).reshape(n, len(self._core.columns)).astype(np.float64)
        return x, np.asarray(labels, dtype=np.int64)

    def _frame(self, which: str):
        import pandas as pd

        data, n, _ = self._core.split(which)
        rows = self._core.decode(data)
        frame = pd.DataFrame(rows, columns=self.features)
        for name, kind in self._core.features:
            if kind in _NUMERIC:
                frame[name] = pd.to_numeric(frame[name])
        return frame

    # Explaining.

    def explain(
        self,
        row: Any,
        n: int = 3,
        desired: str | int | None = None,
        immutable: Iterable[str] | None = None,
        increase_only: Iterable[str] | None = None,
        decrease_only: Iterable[str] | None = None,
        free: Iterable[str] | None = None,
        cost: Mapping[str, float] | None = None,
        min_probability: float | None = None,
    ) -> Results:
        """Counterfactuals for one person (a dict or Series of raw feature values) or for each
        row of a DataFrame, as ``cent explain`` finds them with the same options.

        A person the model already gives the favourable class gets one result with status
        ``"already_favourable"`` (unless ``desired`` asks for a class); one without an answer
        gets status ``"not_found"`` and the reason. A bad value, a missing feature or a bad
        option raises :class:`CentError` with the CLI's message.
        """
        out = Results()
        out.features = self.features
        options = _options(n, desired, immutable, increase_only, decrease_only, free, cost, min_probability)
        for label, fields in _rows(row):
            answer = json.loads(self._core.explain(fields, options))
            out.extend(_results(label, answer))
        return out

    def explain_on_device(
        self,
        row: Any,
        bundle: str | os.PathLike,
        n: int = 3,
        desired: str | int | None = None,
        immutable: Iterable[str] | None = None,
        increase_only: Iterable[str] | None = None,
        decrease_only: Iterable[str] | None = None,
        free: Iterable[str] | None = None,
        cost: Mapping[str, float] | None = None,
        seed: int | None = None,
        **options: float,
    ) -> Results:
        """What a device running ``bundle`` (``cent export``, from this dataset, model and seed)
        tells one person or each row of a DataFrame, as ``cent explain --bundle`` shows it: the
        bundle's quantized encoder, classifier and atlas run as the firmware runs them, each
        answer judged by this explainer's model.

        ``n`` is 1 to 3; ``options`` are the device's (``lead``, ``candidates``,
        ``compare_calls``, ``runner_up_calls``, ``people_calls``, ``defer_below``,
        ``balance_calls``, ``max_search``; the firmware's defaults otherwise). ``seed`` seeds each
        query's random generator; by default a row's 0-based position among ``row``'s rows, as
        in a ``--query`` file (the firmware's query ``i``, test row ``i``, is ``seed=i``).

        An answer the model confirms has status ``"explained"``; one it does not,
        ``"unconfirmed"`` (``found`` is false): it is what the device would say, never a
        counterfactual. ``target`` and ``probability`` are the model's class and probability
        for the answer, ``realization`` is ``"region"`` or ``"person"``, ``explanation`` the
        device's whole explanation (``device`` in ``cent explain --bundle --format json``). A
        person the device answers nothing has status ``"not_found"`` and its reason.
        """
        out = Results()
        out.features = self.features
        request = _options(n, desired, immutable, increase_only, decrease_only, free, cost, None)
        named = [(str(k), float(v)) for k, v in options.items()]
        path = os.path.abspath(os.fspath(bundle))
        for position, (label, fields) in enumerate(_rows(row)):
            query_seed = position if seed is None else int(seed)
            answer = json.loads(self._core.explain_on_device(fields, path, request, named, query_seed))
            out.extend(_device_results(label, answer))
        return out

    def batch(
        self,
        data: Any,
        out: str | os.PathLike | None = None,
        threads: int = 2,
        chunk: int = 1024,
        limit: int | None = None,
        keep: Iterable[str] | None = None,
        n: int = 3,
        desired: str | int | None = None,
        immutable: Iterable[str] | None = None,
        increase_only: Iterable[str] | None = None,
        decrease_only: Iterable[str] | None = None,
        free: Iterable[str] | None = None,
        cost: Mapping[str, float] | None = None,
        min_probability: float | None = None,
    ):
        """Explains every row of a CSV or Parquet file (or a DataFrame) in parallel, as
        ``cent batch``. With ``out`` (``.jsonl``, ``.csv`` or ``.parquet``) the results are
        written there and the summary (counts) is returned; without, the results are returned
        as a DataFrame in ``cent batch``'s CSV layout (``line`` is the input's line: row ``i``
        of a DataFrame is line ``i + 2``). ``keep`` names input columns carried into the
        results after ``line``, as text (an identifier to join them on)."""
        options = _options(n, desired, immutable, increase_only, decrease_only, free, cost, min_probability)
        with tempfile.TemporaryDirectory(prefix="cent-batch-") as tmp:
            if hasattr(data, "to_csv"):
                source = os.path.join(tmp, "input.csv")
                data.to_csv(source, index=False)
            else:
                source = os.path.abspath(os.fspath(data))
            target = os.path.abspath(os.fspath(out)) if out is not None else os.path.join(tmp, "results.csv")
            try:
                summary = json.loads(
                    self._core.batch(source, target, int(threads), int(chunk), limit, _names(keep), options)
                )
            except CentError as e:
                if not hasattr(data, "to_csv"):
                    raise
                # The DataFrame went through a temporary file: name the DataFrame, not the file.
                raise CentError(str(e).replace(f"{source}: line 1: ", "the DataFrame's columns: ")) from None
            if out is not None:
                return summary
            import pandas as pd

            return pd.read_csv(target, dtype={"reason": str, "changes": str}, keep_default_na=False, na_values=[""])


def _results(label: Any, answer: dict) -> list[Result]:
    decision = answer["decision"]
    common = dict(row=label, decision=decision["name"], decision_probability=decision["probability"])
    if answer.get("already_favourable"):
        return [Result(status="already_favourable", **common)]
    if "not_found" in answer:
        return [Result(status="not_found", reason=answer["not_found"], **common)]
    explanation = answer["explanation"]
    out = []
    for cf, values in zip(explanation["counterfactuals"], answer["values"]):
        out.append(Result(
            status="explained", rank=cf["rank"], target=cf["class"]["name"],
            probability=cf["class"]["probability"], cost=cf["cost"], l0=cf["l0"],
            realization=cf["realization"], agreement=cf.get("agreement"),
            changes={c["feature"]: (c["before"], c["after"]) for c in cf["changes"]},
            values=values, explanation=explanation, **common,
        ))
    return out


def _device_results(label: Any, answer: dict) -> list[Result]:
    decision = answer["decision"]
    common = dict(row=label, decision=decision["name"], decision_probability=decision["probability"])
    if answer.get("already_favourable"):
        return [Result(status="already_favourable", **common)]
    device = answer["device"]
    if not device["answers"]:
        return [Result(status="not_found", reason=device.get("not_found"), explanation=device, **common)]
    out = []
    for a, values in zip(device["answers"], answer["values"]):
        out.append(Result(
            status="explained" if a["confirmed"] else "unconfirmed", rank=a["rank"],
            target=a["model"]["name"], probability=a["model"]["probability"], cost=a["cost"], l0=a["l0"],
            realization=a["source"]["kind"], agreement=a["agreement"],
            changes={c["feature"]: (c["before"], c["after"]) for c in a["changes"]},
            values=values, explanation=device, **common,
        ))
    return out


def encoded_split(
    dataset: str | None = None,
    *,
    schema: str | os.PathLike | None = None,
    data: Any = None,
    split: str = "train",
    seed: int = 1,
    cache: str | os.PathLike | None = None,
):
    """One split's rows as the models see them, as a DataFrame: one ``float32`` column per
    encoded column (:attr:`Explainer.columns`), then the row's class index (``int64``) under the
    target column's name; what a model of your own trains on (``split="train"``) or is tested
    on (``"test"``), encoded as an :class:`Explainer` with the same data and ``seed`` gives it
    rows. Loads and splits the data only: no model is trained or read (the CLI's
    ``cent encode``). ``dataset``, ``schema``, ``data``, ``seed`` and ``cache`` as for
    :class:`Explainer`."""
    import pandas as pd

    schema, cache = _paths(dataset, schema, cache)
    csv, frame_file = _data_file(data)
    try:
        raw, n, labels, columns, target = _encoded_split(dataset, schema, csv, split, int(seed), cache)
    finally:
        if frame_file is not None:
            os.unlink(frame_file)
    x = np.frombuffer(raw, dtype=np.float32).reshape(n, len(columns))
    frame = pd.DataFrame(x, columns=columns, copy=True)  # the bytes are read-only
    frame[target] = np.asarray(labels, dtype=np.int64)
    return frame


def draft_schema(
    data: str | os.PathLike,
    target: str,
    *,
    favourable: str | None = None,
    out: str | os.PathLike | None = None,
    header: bool = True,
    names: Iterable[str] | None = None,
    delimiter: str = ",",
    missing: Iterable[str] = (),
    name: str | None = None,
) -> str:
    """A first schema for a CSV file of your own, as TOML (the CLI's ``cent schema``): each
    column's kind from its values, identifiers and free text left out, the missing-value tokens
    the file holds, the target's classes, features whose names say they are personal
    immutable, and the links the rows show; every choice with its reason as a comment.
    ``favourable`` is the target value recourse is asked for: left out, or not a value of the
    target, :class:`CentError` lists the values. With ``out`` the schema is written there too,
    naming ``data`` relative to it, and ``Explainer(schema=out)`` reads it as it is. ``header``
    False reads a file without a header line, its columns ``names`` (else ``column_1``, …).
    Read the draft before use: which features a person can change, and how, is yours to say."""
    names = list(_names(names)) if names is not None else None
    data = os.path.abspath(os.fspath(data))
    out = os.path.abspath(os.fspath(out)) if out is not None else None
    favourable = _text("favourable", favourable) if favourable is not None else None
    return _draft_schema(data, _text("target", target), favourable, bool(header), names, delimiter,
                         [_text("missing", m) for m in missing], name, out)


def _paths(dataset, schema, cache) -> tuple[str | None, str]:
    """The schema and the cache (default ``$CENT_CACHE``, else ``data/cache``) as absolute paths."""
    if dataset is not None and schema is not None:
        raise CentError("give either dataset or schema, not both")
    cache = cache if cache is not None else os.environ.get("CENT_CACHE", "data/cache")
    schema = os.path.abspath(os.fspath(schema)) if schema is not None else None
    return schema, os.path.abspath(os.fspath(cache))


def _data_file(data) -> tuple[str | None, str | None]:
    """The data's file for the library, and the temporary file a DataFrame was written to (the
    caller removes it)."""
    if data is not None and hasattr(data, "to_csv"):
        frame_file = _frame_csv(data)
        return frame_file, frame_file
    if data is not None:
        return os.path.abspath(os.fspath(data)), None
    return None, None


def _frame_csv(frame) -> str:
    """The DataFrame as a temporary CSV file (the library reads data from files)."""
    handle, path = tempfile.mkstemp(prefix="cent-data-", suffix=".csv")
    os.close(handle)
    frame.to_csv(path, index=False)
    return path


def _rebuild(args: dict) -> Explainer:
    args = dict(args)
    return Explainer(args.pop("dataset"), **args)
