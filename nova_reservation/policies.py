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

"""Policy of the lease API (oslo.policy), with defaults an operator can
override in Nova's policy file."""

import threading

from oslo_policy import policy

from nova_reservation import conf

ADMIN = 'role:admin'
PROJECT_READER = 'role:reader and project_id:%(project_id)s'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'
ADMIN_OR_READER = ADMIN + ' or (' + PROJECT_READER + ')'
ADMIN_OR_MEMBER = ADMIN + ' or (' + PROJECT_MEMBER + ')'
# Every rule is about a project's leases or the cloud's hosts as a project
# sees them: a system-scoped token is refused.
SCOPE_TYPES = ['project']

LEASES_GET = 'reservation:leases:get'
LEASES_LIST = 'reservation:leases:list'
LEASES_LIST_ALL_PROJECTS = 'reservation:leases:list_all_projects'
LEASES_CREATE = 'reservation:leases:create'
LEASES_UPDATE = 'reservation:leases:update'
LEASES_DELETE = 'reservation:leases:delete'
LEASES_RETRY_EVENT = 'reservation:leases:retry_event'
# Sharing: the owner's, then the rules of a project a lease is shared
# with, checked on that project.
LEASES_SHARE = 'reservation:leases:share'
LEASES_GET_SHARED = 'reservation:leases:get_shared'
LEASES_LIST_SHARED = 'reservation:leases:list_shared'
RESERVATIONS_BOOT_SHARED = 'reservation:reservations:boot_shared'
LEASES_SPLIT = 'reservation:leases:split'
LEASES_SPLIT_TO_PROJECT = 'reservation:leases:split_to_project'
LEASES_APPROVE = 'reservation:leases:approve'
LEASES_REJECT = 'reservation:leases:reject'
# A maintenance window (a lease of a maintenance reservation).
LEASES_MAINTENANCE = 'reservation:leases:maintenance'
AVAILABILITY_GET = 'reservation:availability:get'
LEDGER_GET = 'reservation:ledger:get'
LEDGER_GET_ALL_NODES = 'reservation:ledger:get_all_nodes'
HOSTS_LIST = 'reservation:os-hosts:list'
HOSTS_GET = 'reservation:os-hosts:get'
HOSTS_CREATE = 'reservation:os-hosts:create'
HOSTS_UPDATE = 'reservation:os-hosts:update'
HOSTS_DELETE = 'reservation:os-hosts:delete'
HOSTS_LIST_ALLOCATIONS = 'reservation:os-hosts:list_allocations'
HOSTS_GET_ALLOCATION = 'reservation:os-hosts:get_allocation'
HOSTS_LIST_PROPERTIES = 'reservation:os-hosts:list_properties'
HOSTS_UPDATE_PROPERTY = 'reservation:os-hosts:update_property'
FLOATINGIPS_LIST = 'reservation:floatingips:list'
FLOATINGIPS_GET = 'reservation:floatingips:get'
FLOATINGIPS_CREATE = 'reservation:floatingips:create'
FLOATINGIPS_DELETE = 'reservation:floatingips:delete'
QUOTAS_GET = 'reservation:quotas:get'
QUOTAS_UPDATE = 'reservation:quotas:update'

# The one rule that covered every os-hosts operation before they had a
# rule each: an operator's override of it still applies to every one of
# them, unless that operation's own rule is overridden too.
HOSTS_DEPRECATED = policy.DeprecatedRule(
    'reservation:os-hosts', ADMIN,
    deprecated_reason='Each os-hosts operation has a rule of its own; an '
                      'override of reservation:os-hosts applies to every '
                      'operation whose own rule is not overridden.',
    deprecated_since='0.0.1')


def _rule(name: str, check_str: str, description: str, method: str,
          path: str, **extra) -> policy.DocumentedRuleDefault:
    return policy.DocumentedRuleDefault(
        name, check_str, description, [{'method': method, 'path': path}],
        scope_types=SCOPE_TYPES, **extra)


def _hosts_rule(name: str, description: str, method: str,
                path: str) -> policy.DocumentedRuleDefault:
    return _rule(name, ADMIN, description, method, path,
                 deprecated_rule=HOSTS_DEPRECATED)


RULES = [
    _rule(LEASES_GET, ADMIN_OR_READER, 'Show a lease.',
          'GET', '/v1/leases/{id}'),
    _rule(LEASES_LIST, ADMIN_OR_READER, 'List the leases of the project.',
          'GET', '/v1/leases'),
    _rule(LEASES_LIST_ALL_PROJECTS, ADMIN,
          'List the leases of every project.', 'GET', '/v1/leases'),
    _rule(AVAILABILITY_GET, ADMIN_OR_READER, 'Search when a reservation '
          'would fit (read only).', 'GET', '/v1/availability'),
    _rule(LEDGER_GET, ADMIN_OR_READER, 'Show the ledger as a calendar: '
          'the project\'s own allocations and the free capacity per '
          'flavor (read only).', 'GET', '/v1/ledger'),
    _rule(LEDGER_GET_ALL_NODES, ADMIN, 'Show every allocation of the '
          'ledger, on every node by name.', 'GET', '/v1/ledger'),
    _rule(LEASES_CREATE, ADMIN_OR_MEMBER, 'Create a lease.',
          'POST', '/v1/leases'),
    _rule(LEASES_UPDATE, ADMIN_OR_MEMBER, 'Change a lease.',
          'PUT', '/v1/leases/{id}'),
    _rule(LEASES_DELETE, ADMIN_OR_MEMBER, 'Delete a lease.',
          'DELETE', '/v1/leases/{id}'),
    _rule(LEASES_RETRY_EVENT, ADMIN,
          'Run again an event of a lease that failed (ERROR).',
          'POST', '/v1/leases/{id}/events/{event_id}/retry'),
    _rule(LEASES_SHARE, ADMIN_OR_MEMBER, 'Share a capacity or host '
          'reservation of a lease with other projects, or take a share '
          'back (its shared_with, in a create or a change; checked on the '
          'lease\'s project).', 'PUT', '/v1/leases/{id}'),
    _rule(LEASES_GET_SHARED, ADMIN_OR_READER, 'Show a lease that another '
          'project shares with this one (checked on this project).',
          'GET', '/v1/leases/{id}'),
    _rule(LEASES_LIST_SHARED, ADMIN_OR_READER, 'List, besides the '
          'project\'s own leases, those other projects share with it '
          '(checked on this project).', 'GET', '/v1/leases'),
    _rule(LEASES_MAINTENANCE, ADMIN, 'Make a maintenance window: a lease '
          'of a maintenance reservation, which holds compute nodes whole '
          'and disables their compute services while it runs.', 'POST',
          '/v1/leases'),
    _rule(RESERVATIONS_BOOT_SHARED, ADMIN_OR_MEMBER, 'Boot into a '
          'reservation that another project shares with this one, naming '
          'it or matched by an open reservation (checked on this '
          'project).', 'POST', '/v2.1/servers'),
    _rule(LEASES_SPLIT, ADMIN_OR_MEMBER, 'Hand part of a capacity or host '
          'reservation, with the servers on it, on to a new lease of the '
          'same project.', 'POST', '/v1/leases/{id}/split'),
    _rule(LEASES_SPLIT_TO_PROJECT, ADMIN, 'Split a lease into a new lease '
          'of another project (checked on that project).',
          'POST', '/v1/leases/{id}/split'),
    _rule(QUOTAS_GET, ADMIN_OR_READER, 'Show the reservation quota of a '
          'project and its use (checked on that project).',
          'GET', '/v1/quotas/{project_id}'),
    _rule(QUOTAS_UPDATE, ADMIN, 'Set the reservation quota of a project.',
          'PUT', '/v1/quotas/{project_id}'),
    _rule(LEASES_APPROVE, ADMIN, 'Approve a lease that waits for approval '
          '(PENDING_APPROVAL): it goes on as any lease.',
          'POST', '/v1/leases/{id}/approve'),
    _rule(LEASES_REJECT, ADMIN, 'Reject a lease that waits for approval: '
          'nothing of it is left.', 'POST', '/v1/leases/{id}/reject'),
    _hosts_rule(HOSTS_LIST, 'List the reservable hosts.',
                'GET', '/v1/os-hosts'),
    _hosts_rule(HOSTS_GET, 'Show a reservable host.',
                'GET', '/v1/os-hosts/{id}'),
    _hosts_rule(HOSTS_CREATE, 'Enroll a compute node as a reservable host.',
                'POST', '/v1/os-hosts'),
    _hosts_rule(HOSTS_UPDATE,
                'Change the extra capabilities of a reservable host.',
                'PUT', '/v1/os-hosts/{id}'),
    _hosts_rule(HOSTS_DELETE, 'Remove a host from the reservable hosts.',
                'DELETE', '/v1/os-hosts/{id}'),
    _hosts_rule(HOSTS_LIST_ALLOCATIONS,
                'List the leases holding each reservable host.',
                'GET', '/v1/os-hosts/allocations'),
    _hosts_rule(HOSTS_GET_ALLOCATION,
                'Show the leases holding a reservable host.',
                'GET', '/v1/os-hosts/{id}/allocation'),
    _hosts_rule(HOSTS_LIST_PROPERTIES,
                'List the extra capabilities of the reservable hosts '
                '(Blazar\'s resource properties).',
                'GET', '/v1/os-hosts/properties'),
    _hosts_rule(HOSTS_UPDATE_PROPERTY,
                'Make an extra capability of the reservable hosts private '
                '(seen by admins only), or not.',
                'PATCH', '/v1/os-hosts/properties/{name}'),
    _rule(FLOATINGIPS_LIST, ADMIN, 'List the floating IP addresses that '
          'leases may take.', 'GET', '/v1/floatingips'),
    _rule(FLOATINGIPS_GET, ADMIN, 'Show a floating IP address that leases '
          'may take.', 'GET', '/v1/floatingips/{id}'),
    _rule(FLOATINGIPS_CREATE, ADMIN, 'Register an address of an external '
          'network that leases may take.', 'POST', '/v1/floatingips'),
    _rule(FLOATINGIPS_DELETE, ADMIN, 'Remove a floating IP address from '
          'those leases may take.', 'DELETE', '/v1/floatingips/{id}'),
]

_ENFORCER = None
# Under native threads, the first requests may come at once: one enforcer,
# seen by the others only once its rules are registered.
_ENFORCER_LOCK = threading.Lock()


def list_rules() -> list:
    return RULES


def enforcer() -> policy.Enforcer:
    global _ENFORCER
    current = _ENFORCER
    if current is not None:
        return current
    with _ENFORCER_LOCK:
        if _ENFORCER is None:
            made = policy.Enforcer(conf.CONF)
            made.register_defaults(RULES)
            _ENFORCER = made
        return _ENFORCER


def reset() -> None:
    """Forget the enforcer, so that the next check reads the policy file
    named in the configuration then (as Nova's own ``policy.reset``).
    """
    global _ENFORCER
    with _ENFORCER_LOCK:
        if _ENFORCER is not None:
            _ENFORCER.clear()
        _ENFORCER = None


def authorize(ctx, rule: str, target: dict) -> bool:
    """True if the request's credentials pass `rule` on `target`."""
    return enforcer().authorize(rule, target, ctx.to_policy_values(),
                                do_raise=False)
