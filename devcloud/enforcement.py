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

"""A stand-in of an operator's usage enforcement service, as one written
for Blazar's ExternalServiceFilter: it records each POST (its path, its
token, its JSON body) and answers as the test tells it, on loopback.
"""

import json
import socket
import threading
import time
from typing import Callable, Optional

import fixtures

from devcloud import standins

ACCEPT = (204, b'', 0)


def refuse(message) -> tuple:
    """A refusal with this reason (anything JSON can carry)."""
    return (403, json.dumps({'message': message}).encode(), 0)


def slow(seconds: float, answer: tuple = ACCEPT) -> tuple:
    """`answer`, after `seconds`."""
    return answer[:2] + (seconds,)


# Answers that are neither an acceptance nor a refusal with a reason.
GARBAGE = (200, b'\x00{not json', 0)
FAILED = (500, b'{"message": "internal details"}', 0)
REFUSED_BARE = (403, b'<html>Forbidden</html>', 0)


class EnforcementService(fixtures.Fixture):
    """The service on 127.0.0.1 (`port`: 0, any free one); ``url`` is
    its base endpoint; ``decide(path, body)`` gives each answer as
    (status, bytes, delay) (``answer`` sets one for all); ``received``:
    [(path, X-Auth-Token, body)].
    """

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.decide: Callable[[str, dict], tuple] = lambda p, b: ACCEPT
        self.received: list = []
        self._lock = threading.Lock()

    def answer(self, answer: tuple) -> None:
        self.decide = lambda path, body: answer

    def bodies(self, path: str) -> list:
        with self._lock:
            return [b for p, _, b in self.received if p == path]

    def _app(self, environ, start_response) -> list:
        path = environ['PATH_INFO'].rsplit('/', 1)[-1]
        size = int(environ.get('CONTENT_LENGTH') or 0)
        raw = environ['wsgi.input'].read(size)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {'unreadable': raw.decode('utf-8', 'replace')}
        with self._lock:
            self.received.append((path, environ.get('HTTP_X_AUTH_TOKEN'),
                                  body))
        code, data, delay = self.decide(path, body)
        if delay:
            time.sleep(delay)
        start_response('%d Answer' % code, [
            ('Content-Type', 'application/json'),
            ('Content-Length', str(len(data)))])
        return [data] if data else []

    def _setUp(self) -> None:
        self.server = standins.serve(self._app, self.port)
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.port = self.server.server_port
        self.url = 'http://%s:%d/v1/' % (standins.HOST, self.port)


def closed_port() -> int:
    """A loopback port where nothing listens (a connection is refused)."""
    with socket.socket() as s:
        s.bind((standins.HOST, 0))
        return s.getsockname()[1]


def header(received: list, path: str) -> Optional[str]:
    """The token of the last POST to `path`."""
    tokens = [t for p, t, _ in received if p == path]
    return tokens[-1] if tokens else None
