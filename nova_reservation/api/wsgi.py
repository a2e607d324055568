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

"""Requests and responses of the lease API, in Blazar's shapes."""

import json
import re
from typing import Optional

import webob

from nova_reservation import exception
from nova_reservation import policies
from nova_reservation import validation

VERSION = '1.0'
VERSION_FORMAT = re.compile(r'^[1-9][0-9]*\.(0|[1-9][0-9]*)$')
# As nova-api's own limit (osapi_max_request_body_size), well above any
# lease body.
MAX_BODY_LENGTH = 114688


class Fault(Exception):
    """An error answered in Blazar's shape:
    ``{"error_code": 409, "error_name": ..., "error_message": ...}``.
    """

    def __init__(self, code: int, name: str, message: str,
                 **extra) -> None:
        super().__init__(message)
        self.code, self.name, self.message = code, name, message
        self.extra = extra

    def response(self) -> webob.Response:
        return json_response(self.code, dict(
            error_code=self.code, error_name=self.name,
            error_message=self.message, **self.extra))


def json_response(status: int, body=None) -> webob.Response:
    resp = webob.Response(status=status, content_type='application/json',
                          charset='UTF-8')
    if body is not None:
        resp.text = json.dumps(body)
    return resp


def body_of(req: webob.Request):
    """The JSON body of a POST or PUT, checked for type, size and depth."""
    if req.content_type != 'application/json':
        raise Fault(415, 'UnsupportedMediaType', 'Content-Type: must be '
                    'application/json, not %s' % (req.content_type[:64] or
                                                  'missing'))
    if req.content_length is not None and \
            req.content_length > MAX_BODY_LENGTH:
        raise Fault(413, 'RequestEntityTooLarge', 'body: is larger than %d '
                    'bytes' % MAX_BODY_LENGTH)
    data = req.body_file.read(MAX_BODY_LENGTH + 1)
    if len(data) > MAX_BODY_LENGTH:
        raise Fault(413, 'RequestEntityTooLarge', 'body: is larger than %d '
                    'bytes' % MAX_BODY_LENGTH)
    if not data:
        raise Fault(400, 'InvalidInput', 'body: is required')
    return validation.load_json('body', data)


def query(req: webob.Request) -> dict:
    """The query's fields, each given once."""
    found: dict = {}
    for key, value in req.GET.items():
        if key in found:
            raise exception.InvalidParam(key, 'is given twice')
        found[key] = value
    return found


def check_version(req: webob.Request) -> None:
    """Only 1.0 exists.  As in Blazar: asking for another is a 406, and a
    version that is not MAJOR.MINOR (or ``latest``) is a 400.
    """
    header = req.headers.get('OpenStack-API-Version', '')
    parts = header.split()
    if len(parts) < 1 or parts[0] != 'reservation':
        return   # another service's
    asked = ' '.join(parts[1:])
    if asked == 'latest':
        return
    if not VERSION_FORMAT.match(asked):
        raise Fault(400, 'BadRequest', 'OpenStack-API-Version: %r is not '
                    'a version; use MAJOR.MINOR, such as %s'
                    % (asked[:40], VERSION))
    if asked != VERSION:
        raise Fault(406, 'NotAcceptable', 'version %s of the reservation '
                    'API is not supported; the only one is %s'
                    % (asked, VERSION))


def authorize(ctx, rule: str, project_id: Optional[str] = None) -> None:
    """A 403 unless the policy `rule` allows the request on the project
    (the caller's by default).
    """
    if not policies.authorize(ctx, rule, {
            'project_id': project_id or ctx.project_id}):
        raise exception.NotAllowed('policy does not allow %s '
                                   'for this user' % rule)
