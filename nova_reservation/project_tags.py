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

"""The tags of a project in Keystone, read with the caller's token (a
member may read their own project) and kept for a minute per project:
project tags are set by admins only, so a project can not drop its own.
"""

import threading
import time
from typing import Optional

from keystoneauth1 import exceptions as ks_exceptions
from nova import utils as nova_utils
from oslo_log import log as logging

LOG = logging.getLogger(__name__)
# Seconds a project's tags are kept before they are read again.
TAGS_TTL = 60

_TAGS: dict = {}
_LOCK = threading.Lock()


def tags(ctx) -> tuple:
    """The tags of the caller's project in Keystone (none if Keystone can
    not tell: a boot is not refused for it).
    """
    now = time.monotonic()
    with _LOCK:
        known = _TAGS.get(ctx.project_id)
    if known is not None and known[0] > now:
        return known[1]
    found = _read(ctx)
    if found is not None:
        with _LOCK:
            _TAGS[ctx.project_id] = (now + TAGS_TTL, found)
        return found
    return known[1] if known is not None else ()


def _read(ctx) -> Optional[tuple]:
    try:
        identity = nova_utils.get_ksa_adapter(
            'identity', ksa_auth=ctx.get_auth_plugin(), min_version=(3, 0),
            max_version=(3, 'latest'))
        resp = identity.get('/projects/%s' % ctx.project_id,
                            raise_exc=False)
    except ks_exceptions.ClientException as e:
        LOG.warning('The tags of project %s could not be read: %s',
                    ctx.project_id, e)
        return None
    if resp.status_code != 200:
        LOG.warning('The tags of project %s could not be read: %s',
                    ctx.project_id, resp.status_code)
        return None
    return tuple(resp.json().get('project', {}).get('tags') or ())
