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

"""Stand-ins for services in tests: a small threaded HTTP server for a
WSGI application (``serve``), on loopback only, with JSON replies
(``json_reply``); the tests answer for Nova with it.
"""

import json
import socketserver
import threading
from wsgiref import simple_server

HOST = '127.0.0.1'


def json_reply(start_response, status: str, body: dict) -> list:
    """Answer a WSGI request with `body` as JSON."""
    data = json.dumps(body).encode()
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))])
    return [data]


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


def serve(app, port: int) -> simple_server.WSGIServer:
    """Serve `app` on loopback at `port` (0: any free port) in a daemon
    thread; ``server_port`` tells the port, ``shutdown()`` stops it.
    """
    server = simple_server.make_server(HOST, port, app, _Server,
                                       _QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
