"""The GIL is released while Rust works: other Python threads run during a batch."""

import threading
import time


def test_other_threads_run_during_a_batch(adult, test_frame):
    frame = test_frame.iloc[:300]
    span = {}

    def work():
        span["start"] = time.perf_counter()
        adult.batch(frame, threads=1)
        span["end"] = time.perf_counter()

    worker = threading.Thread(target=work)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    during = [t for t in ticks if span["start"] <= t <= span["end"]]
    duration = span["end"] - span["start"]
    assert duration > 0.2, f"the batch took {duration:.3f} s: too short to judge"
    # Held for the whole call, the GIL would leave one gap as long as the batch.
    gaps = [b - a for a, b in zip([span["start"], *during], [*during, span["end"]])]
    assert max(gaps) < duration / 2, (max(gaps), duration, len(during))
