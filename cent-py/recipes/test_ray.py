"""The Ray Data recipe: the same people through `map_batches` with the explainer shipped to Ray's
workers (pickled) give exactly the rows `cent batch` writes. Runs in CI with the Spark recipe.

    pip install "ray[data]"
    CENT_BIN=target/debug/cent pytest cent-py/recipes
"""

from conftest import SEED, assert_same_rows, batch_step

import cent


def test_ray_map_batches_matches_cent_batch(portfolio, cache):
    import ray

    people, expected = portfolio
    step = batch_step()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        explainer = cent.Explainer("adult", seed=SEED, cache=cache)
        data = ray.data.from_pandas(people).repartition(4)
        out = data.map_batches(lambda pdf: step(explainer, pdf), batch_format="pandas",
                               batch_size=None).to_pandas()
    finally:
        ray.shutdown()
    assert_same_rows(out.astype(str), expected)
