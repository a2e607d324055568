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

"""In-process messaging (oslo.messaging's fake driver, Nova's harness's
bus) whose listeners are woken when a message comes or when they stop.

The fake driver's listener looks at its queues every 50 ms: each RPC call,
cast and notification of a service in the process waited for the next look
(25 ms on average, several times a boot), and each RPC server's stop waited
50 ms for its listener's thread (a cloud's cleanup stops seven of them).
What is sent, to whom and in which order is the driver's own.
"""

import threading
import time

import fixtures
from oslo_messaging._drivers import base
from oslo_messaging._drivers import impl_fake

# The driver's own interval: the longest a listener waits between two looks,
# so that a wake-up missed costs no more than it did.
LONGEST_WAIT = 0.05
FAKE = 'oslo_messaging._drivers.impl_fake.'


class Wakeups(fixtures.Fixture):
    """The fake driver, its listeners woken by each delivery (a message
    put in any queue, a requeue included) and by their stop, while the
    fixture is set up.
    """

    def _setUp(self) -> None:
        # Made here, after the eventlet or threads choice.
        self._changed = threading.Condition()
        self._changes = 0
        deliver = impl_fake.FakeExchange.deliver_message
        stop = impl_fake.FakeListener.stop

        def deliver_message(exchange, *args, **kwargs):
            deliver(exchange, *args, **kwargs)
            self._wake()

        def stop_listener(listener):
            stop(listener)
            self._wake()

        for name, new in (
                ('FakeExchange.deliver_message', deliver_message),
                ('FakeListener.stop', stop_listener),
                ('FakeListener.poll', base.batch_poll_helper(self._poll))):
            self.useFixture(fixtures.MonkeyPatch(FAKE + name, new))

    def _wake(self) -> None:
        with self._changed:
            self._changes += 1
            self._changed.notify_all()

    def _poll(self, listener, timeout=None):
        """``FakeListener.poll``: a message of the listener's queues, or
        None once it stops or `timeout` passes; between two looks it waits
        for a change.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not listener._stopped.is_set():
            # A change from here on is seen at the wait below.
            seen = self._changes
            for target in listener._targets:
                exchange = listener._exchange_manager.get_exchange(
                    target.exchange)
                ctxt, message, reply_q, requeue = exchange.poll(
                    target, listener._pool)
                if message is not None:
                    return impl_fake.FakeIncomingMessage(
                        ctxt, message, reply_q, requeue)
            pause = LONGEST_WAIT
            if deadline is not None:
                pause = min(pause, deadline - time.monotonic())
                if pause < 0:
                    break
            with self._changed:
                if (self._changes == seen and
                        not listener._stopped.is_set()):
                    self._changed.wait(pause)
        return None
