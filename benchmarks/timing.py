"""How long a call takes, over a time budget."""

import time
from typing import Callable


def per_call(fn: Callable, calls: list, budget: float) -> float:
    """Seconds per call of fn(*args) for each args of `calls`, repeated
    until at least `budget` seconds have gone.
    """
    done, t0 = 0, time.perf_counter()
    while True:
        for args in calls:
            fn(*args)
        done += len(calls)
        elapsed = time.perf_counter() - t0
        if elapsed >= budget:
            return elapsed / done
