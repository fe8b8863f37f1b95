import os
from typing import Any, Iterable, Mapping, Optional, Protocol, Sequence, Tuple, Union

import numpy as np

class CentError(ValueError): ...

class ProbabilisticModel(Protocol):
    def predict_proba(self, X: np.ndarray) -> Any: ...

class Result:
    row: Any
    status: str
    reason: Optional[str]
    decision: str
    decision_probability: float
    rank: Optional[int]
    target: Optional[str]
    probability: Optional[float]
    cost: Optional[float]
    l0: Optional[int]
    realization: Optional[str]
    agreement: Optional[float]
    changes: Optional[dict[str, Tuple[str, str]]]
    values: Optional[list[str]]
    explanation: Optional[dict[str, Any]]
    @property
    def found(self) -> bool: ...
    def to_dict(self) -> dict[str, Any]: ...

class Results(list[Result]):
    features: list[str]
    def to_pandas(self, features: Optional[list[str]] = None) -> Any: ...

Row = Union[Mapping[str, Any], Any]

class Explainer:
    def __init__(
        self,
        dataset: Optional[str] = None,
        *,
        schema: Union[str, os.PathLike[str], None] = None,
        data: Any = None,
        model: Union[str, os.PathLike[str], ProbabilisticModel] = "mlp",
        seed: int = 1,
        cache: Union[str, os.PathLike[str], None] = None,
        k: int = 1000,
        max_search: int = 50,
        widen: int = 1,
        plausibility: float = 0.52,
        single_moves: bool = True,
    ) -> None: ...
    @property
    def dataset(self) -> str: ...
    @property
    def features(self) -> list[str]: ...
    @property
    def columns(self) -> list[str]: ...
    @property
    def classes(self) -> list[str]: ...
    @property
    def favourable(self) -> str: ...
    def encode(self, rows: Any) -> np.ndarray: ...
    def training_rows(self) -> Tuple[np.ndarray, np.ndarray]: ...
    def test_rows(self) -> Tuple[np.ndarray, np.ndarray]: ...
    def test_frame(self) -> Any: ...
    def explain(
        self,
        row: Any,
        n: int = 3,
        desired: Union[str, int, None] = None,
        immutable: Optional[Iterable[str]] = None,
        increase_only: Optional[Iterable[str]] = None,
        decrease_only: Optional[Iterable[str]] = None,
        free: Optional[Iterable[str]] = None,
        cost: Optional[Mapping[str, float]] = None,
        min_probability: Optional[float] = None,
    ) -> Results: ...
    def explain_on_device(
        self,
        row: Any,
        bundle: Union[str, os.PathLike[str]],
        n: int = 3,
        desired: Union[str, int, None] = None,
        immutable: Optional[Iterable[str]] = None,
        increase_only: Optional[Iterable[str]] = None,
        decrease_only: Optional[Iterable[str]] = None,
        free: Optional[Iterable[str]] = None,
        cost: Optional[Mapping[str, float]] = None,
        seed: Optional[int] = None,
        **options: float,
    ) -> Results: ...
    def batch(
        self,
        data: Any,
        out: Union[str, os.PathLike[str], None] = None,
        threads: int = 2,
        chunk: int = 1024,
        limit: Optional[int] = None,
        keep: Optional[Iterable[str]] = None,
        n: int = 3,
        desired: Union[str, int, None] = None,
        immutable: Optional[Iterable[str]] = None,
        increase_only: Optional[Iterable[str]] = None,
        decrease_only: Optional[Iterable[str]] = None,
        free: Optional[Iterable[str]] = None,
        cost: Optional[Mapping[str, float]] = None,
        min_probability: Optional[float] = None,
    ) -> Any: ...

def draft_schema(
    data: Union[str, os.PathLike[str]],
    target: str,
    *,
    favourable: Optional[str] = None,
    out: Union[str, os.PathLike[str], None] = None,
    header: bool = True,
    names: Optional[Iterable[str]] = None,
    delimiter: str = ",",
    missing: Iterable[str] = (),
    name: Optional[str] = None,
) -> str: ...

def encoded_split(
    dataset: Optional[str] = None,
    *,
    schema: Union[str, os.PathLike[str], None] = None,
    data: Any = None,
    split: str = "train",
    seed: int = 1,
    cache: Union[str, os.PathLike[str], None] = None,
) -> Any: ...
