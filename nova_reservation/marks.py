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

"""The marks nova-reservation puts on Nova's own objects (server metadata
and tags, flavor extra specs, host aggregates' metadata): written by the
boot hook and the engine, read by the filter, the engine and the API, so
they are named here, below all of them.
"""

PREFIX = 'reservation:'
# A leased server's lease, and a host reservation's aggregate's.
LEASE_ID = PREFIX + 'lease_id'
# A leased server's lease's name.
LEASE_NAME = PREFIX + 'lease_name'
# A host reservation's aggregate's project.
PROJECT_ID = PREFIX + 'project_id'
# A preemptible server ('true'; also a flavor's extra spec), what is done
# to it when preempted, until when its node holds it, and when it goes.
PREEMPTIBLE = PREFIX + 'preemptible'
ON_PREEMPT = PREFIX + 'on_preempt'
PREEMPTIBLE_UNTIL = PREFIX + 'preemptible_until'
PREEMPT_AT = PREFIX + 'preempt_at'
ON_PREEMPT_ACTIONS = ('shelve', 'delete')
# An ordinary server booted instead of into the reservation it named,
# which it found full or not started (``reservation_fallback``).
FALLBACK_OF = PREFIX + 'fallback_of'
# An ordinary server on a maintenance window's node: the window's start,
# once its owner is told, and once the engine asked Nova to move it.
MAINTENANCE_AT = PREFIX + 'maintenance_at'
MAINTENANCE_MOVE = PREFIX + 'maintenance_move'
# The tag of a leased server.
LEASE_TAG_PREFIX = 'lease-'


def lease_tag(lease_id: str) -> str:
    """The tag of the servers of the lease `lease_id`."""
    return LEASE_TAG_PREFIX + lease_id


# The end of the disabled reason of a compute service that a maintenance
# window disabled: its record of what to enable again at the end.
MAINTENANCE_PREFIX = ' (maintenance window '


def maintenance_mark(lease_id: str) -> str:
    return '%s%s)' % (MAINTENANCE_PREFIX, lease_id)


def by_maintenance(service: dict) -> bool:
    """Whether a maintenance window disabled the compute service (an
    os-services entry), so that its node has not failed.
    """
    return MAINTENANCE_PREFIX in (service.get('disabled_reason') or '')
