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

"""Stand-ins for services: a small threaded HTTP server for a WSGI
application (``serve``), on loopback only, with JSON replies
(``json_reply``); the tests answer for Nova with it.

And the stand-in for the one service of the local cloud that can not run
here: networking (Neutron needs agents, bridges and namespaces).  It owns
nothing: every list is empty, which is all that servers booted with
``--nic none`` need from it.  It trusts every caller: it is for tests and
demos.

    python -m devcloud.standins --port 19696
"""

import argparse
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


def network_service(environ, start_response):
    """A network service that owns no port, network or address."""
    path = environ['PATH_INFO'].rstrip('/')
    if path == '':
        return json_reply(start_response, '200 OK', {'versions': [{
            'id': 'v2.0', 'status': 'CURRENT', 'links': [{
                'rel': 'self', 'href': 'http://%s/v2.0/' %
                environ['HTTP_HOST']}]}]})
    parts = path.split('/')[2:]   # after /v2.0
    if environ['REQUEST_METHOD'] == 'GET' and len(parts) == 1:
        name = parts[0].split('.')[0]
        return json_reply(start_response, '200 OK',
                          {name.replace('-', '_'): []})
    return json_reply(start_response, '404 Not Found', {'NeutronError': {
        'type': 'NotFound', 'message': '%s not found' % path,
        'detail': ''}})


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


def main() -> None:
    parser = argparse.ArgumentParser(description='A network stand-in.')
    parser.add_argument('--port', type=int, required=True)
    args = parser.parse_args()
    serve(network_service, args.port)
    threading.Event().wait()


if __name__ == '__main__':
    main()
