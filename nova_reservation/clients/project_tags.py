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

"""The tags of projects in Keystone, which give a project its default
leases (``default_lease_tag``) and its reservation quotas (``quota_tag``).

A project's tags are read as `keystone_projects` reads a project (with
the caller's token, or the engine's credentials where that token may not
see it), and kept for a minute per project.
"""

import threading
import time
from typing import Optional

from oslo_log import log as logging

from nova_reservation.clients import keystone_projects
from nova_reservation import exception

LOG = logging.getLogger(__name__)
# Seconds a project's tags are kept before they are read again.
TAGS_TTL = 60

_TAGS: dict = {}
_LOCK = threading.Lock()


def tags(ctx, project_id: Optional[str] = None) -> tuple:
    """The tags of project `project_id` (the caller's by default) in
    Keystone; none if Keystone can not tell (nothing is refused for it).
    """
    project_id = project_id or ctx.project_id
    now = time.monotonic()
    with _LOCK:
        known = _TAGS.get(project_id)
    if known is not None and known[0] > now:
        return known[1]
    found = _read(ctx, project_id)
    if found is not None:
        with _LOCK:
            _TAGS[project_id] = (now + TAGS_TTL, found)
        return found
    return known[1] if known is not None else ()


def _read(ctx, project_id: str) -> Optional[tuple]:
    try:
        found = keystone_projects.project(ctx, project_id)
    except exception.KeystoneUnavailable as e:
        LOG.warning('The tags of project %s could not be read: %s',
                    project_id, e)
        return None
    if found is None:
        LOG.warning('The tags of project %s could not be read: Keystone '
                    'knows no such project', project_id)
        return None
    return tuple(found.get('tags') or ())
