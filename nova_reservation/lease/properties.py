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

"""Host requirements of a host reservation (pure).

The format is Blazar's: a JSON list ``[op, "$key", value]``, or
``["and", req, req, ...]`` (``"or"`` works too).  Unlike Blazar, values
that both read as numbers are compared as numbers, so ``[">=", "$vcpus",
"16"]`` holds for 32 vCPUs.  A property of several values (a node's
``traits``) holds a term if one of its values does, and ``!=`` if none
equals: ``["==", "$traits", "CUSTOM_GPU_A100"]`` selects the nodes that
have that trait, ``["!=", "$traits", "CUSTOM_GPU_A100"]`` those without.
"""

import json
import operator
from typing import Any, Callable, Optional

from nova_reservation import capacity
from nova_reservation.exception import InvalidParam
from nova_reservation.exception import InvalidRequirements
from nova_reservation import validation

OPERATORS = {'=': operator.eq, '==': operator.eq, '!=': operator.ne,
             '<': operator.lt, '<=': operator.le, '>': operator.gt,
             '>=': operator.ge}


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _compare(op: str, actual: Any, wanted: Any) -> bool:
    a, w = _number(actual), _number(wanted)
    if a is not None and w is not None:
        return OPERATORS[op](a, w)
    if op not in ('=', '==', '!='):
        return False   # An order between text and numbers means nothing.
    return OPERATORS[op](str(actual), str(wanted))


def parse(text: Any,
          names: Optional[tuple] = None) -> Callable[[dict], bool]:
    """A predicate over a host's properties, or InvalidRequirements; with
    `names`, one that asks about those properties only.
    """
    try:
        if isinstance(text, str) and text.strip():
            text = validation.load_json('requirements', text)
        else:
            validation.check_tree('requirements', text)
    except InvalidParam as e:
        raise InvalidRequirements(str(e).split(': ', 1)[1])
    if text in (None, '', []):
        return lambda props: True
    return _build(text, names)


def _build(req: Any, names: Optional[tuple]) -> Callable[[dict], bool]:
    if not isinstance(req, list) or not req:
        raise InvalidRequirements('must be a list such as '
                                  '[">=", "$vcpus", "4"]')
    head = req[0]
    if not isinstance(head, str):
        raise InvalidRequirements('%s: the first item must be an operator '
                                  'or "and"/"or"' % json.dumps(req)[:200])
    if head in ('and', 'or'):
        parts = [_build(r, names) for r in req[1:]]
        if not parts:
            raise InvalidRequirements('"%s" needs at least one term' % head)
        combine = all if head == 'and' else any
        return lambda props: combine(p(props) for p in parts)
    if head not in OPERATORS or len(req) != 3:
        raise InvalidRequirements('%s is not [op, "$key", value] with op '
                                  'one of %s' % (json.dumps(req)[:200],
                                                 ' '.join(OPERATORS)))
    key = req[1]
    if not isinstance(key, str) or not key.startswith('$') or len(key) < 2:
        raise InvalidRequirements('%s: the key must be a string starting '
                                  'with $' % json.dumps(req)[:200])
    name, wanted = key[1:], req[2]
    if names is not None and name not in names:
        raise InvalidRequirements('%s: only %s can be asked about here' % (
            json.dumps(req)[:200], ' and '.join('$' + n for n in names)))
    return lambda props: name in props and _holds(head, props[name], wanted)


def _holds(op: str, actual: Any, wanted: Any) -> bool:
    if not isinstance(actual, (list, tuple, frozenset, set)):
        return _compare(op, actual, wanted)
    if op == '!=':
        return not any(_compare('==', a, wanted) for a in actual)
    return any(_compare(op, a, wanted) for a in actual)


def hypervisor(node: capacity.Host, host) -> dict:
    """What hypervisor_properties of a host reservation are matched on:
    the enrolled `host`'s record (db.models.Host) and the `node`'s traits
    in Placement (those of its whole tree).
    """
    return {'vcpus': host.vcpus, 'memory_mb': host.memory_mb,
            'local_gb': host.local_gb,
            'hypervisor_type': host.hypervisor_type,
            'hypervisor_version': host.hypervisor_version,
            'hypervisor_hostname': host.hypervisor_hostname,
            'service_name': host.service_name,
            'traits': _traits(node)}


def resource(node: capacity.Host, host) -> dict:
    """What resource_properties of a host reservation are matched on: the
    enrolled `host`'s extra capabilities (Blazar's) and the `node`'s
    traits, unless a capability has that name.
    """
    return dict({'traits': _traits(node)},
                **json.loads(host.extra_capabilities or '{}'))


# What a node of the shared pool (no enrolled record) is matched on.
NODE_NAMES = ('hypervisor_hostname', 'traits')


def node(node: capacity.Host) -> dict:
    """What resource_properties of an instance reservation are matched on:
    a node of the shared pool, by its name and its traits.
    """
    return {'hypervisor_hostname': node.node, 'traits': _traits(node)}


def _traits(node: capacity.Host) -> frozenset:
    """The traits of `node`'s providers, its children's too."""
    return node.traits.union(*(t for _, t in node.child_traits))
