#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

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
