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

"""A thread that reads something again at an interval, for the copies a
scheduler keeps so that its requests read no service (the ledger,
Placement's usage).
"""

import threading
from typing import Callable, Optional

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class Refresher:
    """Calls `refresh()` every interval in a daemon thread of its own,
    started once (`start`) until `stop`; a failed call is logged and the
    next one tried an interval later (the last copy serves meanwhile).
    """

    def __init__(self, refresh: Callable[[], object], name: str) -> None:
        self._refresh = refresh
        self._name = name
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._starting = threading.Lock()

    def start(self, interval: float) -> None:
        if self._thread is not None:
            return
        with self._starting:
            if self._thread is not None:
                return
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(interval, self._stop),
                name=self._name, daemon=True)
            self._thread.start()

    def _run(self, interval: float, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self._refresh()
            except Exception as e:
                LOG.debug('%s: not read: %s', self._name, e)
            stop.wait(interval)

    def stop(self) -> None:
        """Stop the thread (if there is one); a later `start` starts
        another.
        """
        with self._starting:
            thread, self._thread = self._thread, None
            self._stop.set()
        if thread is not None:
            thread.join()
