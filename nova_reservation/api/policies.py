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

from oslo_policy import policy

from nova_reservation import conf

ADMIN = 'role:admin'
PROJECT_READER = 'role:reader and project_id:%(project_id)s'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'

RULES = [
    policy.DocumentedRuleDefault(
        'reservation:leases:get', ADMIN + ' or (' + PROJECT_READER + ')',
        'Show a lease.', [{'method': 'GET', 'path': '/v1/leases/{id}'}]),
    policy.DocumentedRuleDefault(
        'reservation:leases:list', ADMIN + ' or (' + PROJECT_READER + ')',
        'List the leases of the project.',
        [{'method': 'GET', 'path': '/v1/leases'}]),
    policy.DocumentedRuleDefault(
        'reservation:leases:list_all_projects', ADMIN,
        'List the leases of every project.',
        [{'method': 'GET', 'path': '/v1/leases'}]),
    policy.DocumentedRuleDefault(
        'reservation:leases:create', ADMIN + ' or (' + PROJECT_MEMBER + ')',
        'Create a lease.', [{'method': 'POST', 'path': '/v1/leases'}]),
    policy.DocumentedRuleDefault(
        'reservation:leases:update', ADMIN + ' or (' + PROJECT_MEMBER + ')',
        'Change a lease.', [{'method': 'PUT', 'path': '/v1/leases/{id}'}]),
    policy.DocumentedRuleDefault(
        'reservation:leases:delete', ADMIN + ' or (' + PROJECT_MEMBER + ')',
        'Delete a lease.',
        [{'method': 'DELETE', 'path': '/v1/leases/{id}'}]),
    policy.DocumentedRuleDefault(
        'reservation:leases:retry_event', ADMIN,
        'Run again an event of a lease that failed (ERROR).',
        [{'method': 'POST',
          'path': '/v1/leases/{id}/events/{event_id}/retry'}]),
    policy.DocumentedRuleDefault(
        'reservation:os-hosts', ADMIN,
        'Enroll, list, show, change and remove reservable hosts, and see '
        'their allocations.',
        [{'method': 'GET', 'path': '/v1/os-hosts'},
         {'method': 'POST', 'path': '/v1/os-hosts'},
         {'method': 'GET', 'path': '/v1/os-hosts/{id}'},
         {'method': 'PUT', 'path': '/v1/os-hosts/{id}'},
         {'method': 'DELETE', 'path': '/v1/os-hosts/{id}'},
         {'method': 'GET', 'path': '/v1/os-hosts/allocations'},
         {'method': 'GET', 'path': '/v1/os-hosts/{id}/allocation'}]),
]

_ENFORCER = None


def list_rules() -> list:
    return RULES


def enforcer() -> policy.Enforcer:
    global _ENFORCER
    if _ENFORCER is None:
        _ENFORCER = policy.Enforcer(conf.CONF)
        _ENFORCER.register_defaults(RULES)
    return _ENFORCER


def authorize(ctx, rule: str, target: dict) -> bool:
    """True if the request's credentials pass `rule` on `target`."""
    return enforcer().authorize(rule, target, ctx.to_policy_values(),
                                do_raise=False)
