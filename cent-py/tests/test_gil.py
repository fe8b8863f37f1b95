"""The GIL is released while Rust works: other Python threads run during a batch."""

import threading
import time


def run_batch_while_ticking(adult, frame):
    """Runs `adult.batch(frame)` on a worker thread while this thread ticks every millisecond;
    returns the batch's (start, end) and the ticks taken during it."""
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
    return span["start"], span["end"], during


def test_other_threads_run_during_a_batch(adult, test_frame):
    # A batch long enough to judge (0.2 s or more) whatever the machine's speed: 300 rows,
    # then four and sixteen times as many.
    for rows in (300, 1200, 4800):
        start, end, during = run_batch_while_ticking(adult, test_frame.iloc[:rows])
        duration = end - start
        if duration > 0.2:
            break
    assert duration > 0.2, f"the batch of {rows} rows took {duration:.3f} s: too short to judge"
    # Held for the whole call, the GIL would leave one gap as long as the batch.
    gaps = [b - a for a, b in zip([start, *during], [*during, end])]
    assert max(gaps) < duration / 2, (max(gaps), duration, len(during))
