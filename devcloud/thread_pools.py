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

"""Native thread pools (futurist's) that stop at once, with idle workers
that do not poll.

An idle worker of a pool waits for work at most ``MAX_IDLE_FOR`` seconds
(1), then looks whether its pool is stopping, and waits again; a pool that
stops waits for each of its workers.  Nova's test case makes that wait
0.01 s so that its services stop quickly under native threads; but then
every idle worker of every pool of a cloud wakes a hundred times a second,
which took more of the processor than the tests themselves (under native
threads a functional test cost 1.7 times what it costs under eventlet).
Here the workers keep futurist's second, and a pool that stops wakes each
of them with an empty work item.  And Nova's pools of the process are
never shut down for good by a test (`keep_nova_executors`).
"""

import fixtures
import futurist
from futurist import _thread as futurist_thread

IDLE = 1.0
REAL_SHUTDOWN = futurist.ThreadPoolExecutor.shutdown


class _Wake:
    """The empty work item: run by a worker that then sees it is to stop."""

    def run(self) -> None:
        pass


def _shutdown(executor, wait: bool = True, **kwargs) -> None:
    """``ThreadPoolExecutor.shutdown``, waking its workers as it stops them.
    """
    with executor._shutdown_lock:
        first = not executor._shutdown
    if not first:
        return REAL_SHUTDOWN(executor, wait=wait, **kwargs)
    if wait:
        # What the real one waits for before it stops the workers.
        executor._work_queue.join()
    REAL_SHUTDOWN(executor, wait=False, **kwargs)
    workers = list(executor._workers)
    for _ in workers:
        executor._work_queue.put(_Wake())
    if wait:
        for worker in workers:
            worker.join()


class QuickStop(fixtures.Fixture):
    """While set up: idle workers wait a second between looks, and a pool
    that stops wakes them.
    """

    def _setUp(self) -> None:
        self.useFixture(fixtures.MonkeyPatch(
            'futurist._thread.ThreadWorker.MAX_IDLE_FOR', IDLE))
        # An older futurist's stop wakes the workers itself (its
        # tombstone), and they mark no work done (its queue is never
        # joined).
        if not hasattr(futurist_thread, '_TOMBSTONE'):
            self.useFixture(fixtures.MonkeyPatch(
                'futurist.ThreadPoolExecutor.shutdown', _shutdown))


def _keep() -> None:
    """Nova's `shutdown_all_executors` in a test process: nothing."""


def nova_executors():
    """Nova's module of the process's executors, where its managers shut
    them down as their service stops (Nova 34 on); else None.
    """
    try:
        from nova import thread_pool_factory
    except ImportError:
        return None
    if not hasattr(thread_pool_factory, 'shutdown_all_executors'):
        return None
    return thread_pool_factory


def keep_nova_executors() -> None:
    """Nova 34's managers shut the process's executors down for good as
    their service stops, in a thread of their own.  Nova's service fixture
    stands a no-op in for that while it runs, but the thread can outlive
    the fixture: under load it once ran after it, and every later test of
    the worker failed Nova's check that nothing shut them down.  A test
    process never shuts them down: the no-op stays for the process.
    """
    executors = nova_executors()
    if executors is not None:
        executors.shutdown_all_executors = _keep
