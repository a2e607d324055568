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

"""An external usage enforcement service, spoken to as Blazar speaks to
it: a JSON body POSTed with the token as ``X-Auth-Token``; 204 accepts,
403 refuses (its reason: the ``message`` of a JSON object); any other
answer is not one Blazar acts on.
"""

import datetime
import json
from typing import Optional
from urllib import parse

import requests

from nova_reservation.exception import EnforcementMisconfigured
from nova_reservation.exception import EnforcementUnanswered

ACCEPTED = 204
REFUSED = 403
# What a refusal says when the service gives no reason (and what it gave
# is not shown to the user: it may tell more than it should).
NO_REASON = 'the usage enforcement service refused the lease'
# The longest reason shown, and the most of an answer read.
MAX_REASON = 1000
MAX_ANSWER = 64 * 1024


def check_url(option: str, url: Optional[str]) -> None:
    if url is None:
        return
    parsed = parse.urlparse(url)
    if parsed.scheme not in ('http', 'https') or not parsed.netloc:
        raise EnforcementMisconfigured(
            '[enforcement] %s must be an http(s) URL with '
            'a host, not %r' % (option, url))


def endpoint(base: Optional[str], path: str,
             instead: Optional[str]) -> Optional[str]:
    """The URL of one endpoint: `instead`, else `path` joined to `base`
    (as a browser joins them, which is how Blazar does), else None.
    """
    if instead:
        return instead
    return parse.urljoin(base, path) if base else None


def reason(status: int, content: bytes) -> Optional[str]:
    """What an answer says: None (accepted) or the reason of a refusal;
    EnforcementUnanswered for any other answer.
    """
    if status == ACCEPTED:
        return None
    if status != REFUSED:
        raise EnforcementUnanswered('it answered %d, not %d or %d' % (
            status, ACCEPTED, REFUSED))
    try:
        message = json.loads(content.decode('utf-8'))['message']
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return NO_REASON
    if not isinstance(message, str) or not message.strip():
        return NO_REASON
    return message.strip()[:MAX_REASON]


def _iso(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    raise TypeError('%r is not JSON' % (value,))


def post(url: str, body: dict, token: Optional[str],
         timeout: float) -> Optional[str]:
    """POST `body` to `url`; what the answer says (`reason`), or
    EnforcementUnanswered.
    """
    headers = {'Content-Type': 'application/json'}
    if token:
        headers['X-Auth-Token'] = token
    try:
        with requests.post(url, data=json.dumps(body, default=_iso),
                           headers=headers, timeout=timeout,
                           allow_redirects=False, stream=True) as answer:
            content = b''
            for chunk in answer.iter_content(8192):
                content += chunk
                if len(content) >= MAX_ANSWER:
                    break
    except requests.Timeout:
        raise EnforcementUnanswered('it did not answer within %g s' % timeout)
    except requests.RequestException as e:
        raise EnforcementUnanswered(
            'it could not be reached (%s)' % type(e).__name__)
    return reason(answer.status_code, content)
