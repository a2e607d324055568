"""Requests and responses of the lease API, in Blazar's shapes."""

import json

import webob

from nova_reservation.hooks import params

VERSION = '1.0'


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


def invalid(e: params.InvalidParam) -> Fault:
    return Fault(400, 'InvalidInput', str(e))


def json_response(status: int, body=None) -> webob.Response:
    resp = webob.Response(status=status, content_type='application/json',
                          charset='UTF-8')
    if body is not None:
        resp.text = json.dumps(body)
    return resp


def body_of(req: webob.Request):
    if not req.body:
        raise Fault(400, 'InvalidInput', 'the request has no body')
    try:
        return json.loads(req.body)
    except ValueError as e:
        raise Fault(400, 'InvalidInput', 'the body is not JSON (%s)' % e)


def check_version(req: webob.Request) -> None:
    """Only 1.0 exists; asking for another is a 406, as in Blazar."""
    header = req.headers.get('OpenStack-API-Version', '')
    parts = header.split()
    if len(parts) == 2 and parts[0] == 'reservation' and \
            parts[1] not in (VERSION, 'latest'):
        raise Fault(406, 'NotAcceptable', 'version %s of the reservation '
                    'API is not supported; the only one is %s'
                    % (parts[1], VERSION))
