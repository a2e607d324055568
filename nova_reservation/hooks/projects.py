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

"""Default leases from a project's tags in Keystone
(``[reservation] default_lease_tag``).

A project that carries the tag has its ordinary boots made leases, as a
project of ``default_lease_projects`` does; ``<tag>=<N>d`` (``h``, ``m``)
gives them their own length (the tags are read by `project_tags`).
"""

import re
from typing import Iterable, Optional

from oslo_log import log as logging

from nova_reservation.clients import project_tags
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.hooks import params

LOG = logging.getLogger(__name__)
CONF = conf.CONF
UNITS = {'d': 86400, 'h': 3600, 'm': 60}
LENGTH = re.compile(r'^([1-9][0-9]{0,5})([dhm])$')


def default_lease_length(tags: Iterable[str], tag: str,
                         default: int) -> Optional[int]:
    """Seconds of the default lease that `tags` ask for (`default` for the
    bare tag), or None when they do not carry `tag`.
    """
    for found in tags:
        if found == tag:
            return default
        if isinstance(found, str) and found.startswith(tag + '='):
            match = LENGTH.match(found[len(tag) + 1:])
            if match:
                return int(match.group(1)) * UNITS[match.group(2)]
            LOG.warning('Project tag %r: the length is not <N>d, <N>h or '
                        '<N>m; default_lease_duration is used', found)
            return default
    return None


def default_lease(ctx, server: dict) -> Optional[params.LeaseRequest]:
    """The lease of an ordinary boot of a project whose boots are leases
    (``default_lease_projects``, or a project tag in Keystone:
    ``default_lease_tag``), or None.
    """
    length = None
    if ctx.project_id in CONF.reservation.default_lease_projects:
        length = CONF.reservation.default_lease_duration
    elif CONF.reservation.default_lease_tag:
        length = default_lease_length(
            project_tags.tags(ctx), CONF.reservation.default_lease_tag,
            CONF.reservation.default_lease_duration)
    if length is None:
        return None
    return params.default_lease(
        server.get('name'), db_api.utcnow(),
        min(length, CONF.reservation.max_lease_duration),
        CONF.reservation.default_on_end,
        CONF.reservation.default_before_end)
