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

"""What several unit test modules check against: brute forces."""

from typing import Callable


def runs_that_fit(place: Callable, start: int, end: int,
                  duration: int) -> list:
    """The start windows of `place` in [start, end] the slow way: usage
    changes at whole numbers, so every start on a half grid, and the runs
    [(first, last)] of those at which `place(t, t + duration)` finds room.
    """
    runs: list = []
    for k in range(2 * start, 2 * end + 1):
        t = k / 2
        if place(t, t + duration) is None:
            continue
        if runs and runs[-1][1] == t - 0.5:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    return [tuple(r) for r in runs]
