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

"""Lanes: a local cloud's capacity split so that tests run side by side on
one cloud without their leases ever meeting (``tools/localcloud up
--lanes N``).

Each lane has nodes of its own (the same computes, cells, accelerators
and bare-metal nodes as a cloud of one lane has, named with the lane's
suffix), each reporting the lane's trait through Nova's own provider
config files, and a copy of each flavor that asks for that trait
(``trait:CUSTOM_LANE_<n>=required``).  A test in lane N boots the lane's
flavors, names the lane's nodes, and asks for the lane's trait in the
node requirements of what it reserves (an instance reservation's
``resource_properties``, a host reservation's ``hypervisor_properties``):
the planner and Nova's scheduler then place it on the lane's nodes only.
A cloud of one lane has no trait and its names are as they always were.
"""

import json
import re
from typing import Callable, Iterable, Optional, Union

TRAIT = 'CUSTOM_LANE_%d'


def node(name: str, lane: int, lanes: int) -> str:
    """The name in `lane` of the node or compute service `name` of a
    cloud of one lane (compute1, bm1, ironic-compute, ...).
    """
    return name if lanes < 2 or lane == 0 else '%s-l%d' % (name, lane)


def flavor(name: str, lane: int, lanes: int) -> str:
    """The name of `lane`'s copy of the flavor `name`."""
    return name if lanes < 2 else '%s-l%d' % (name, lane)


def trait(lane: int, lanes: int) -> Optional[str]:
    """The trait of `lane`'s nodes; None on a cloud of one lane."""
    return None if lanes < 2 else TRAIT % lane


def extra_specs(lane: int, lanes: int) -> dict:
    """What a flavor adds to its extra specs to be booted on `lane`'s
    nodes only.
    """
    lane_trait = trait(lane, lanes)
    return {'trait:' + lane_trait: 'required'} if lane_trait else {}


def requirements(lane: int, lanes: int,
                 also: Union[None, str, list] = None) -> str:
    """Node requirements (Blazar's JSON filter, as text) that hold on
    `lane`'s nodes only, and `also` (a filter, as text or as a list).
    """
    if isinstance(also, str):
        also = json.loads(also) if also.strip() else None
    lane_trait = trait(lane, lanes)
    if lane_trait is None:
        return json.dumps(also) if also else ''
    own = ['==', '$traits', lane_trait]
    return json.dumps(['and', own, also] if also else own)


def names_any(names: Iterable[str], nodes: Iterable[str]) -> Callable:
    """Whether a text (a violation of the cloud's invariants) names one of
    `names` (ids, or what a test puts in the names of what it makes) or
    one of the nodes `nodes`, each standing alone: compute1 is not
    compute1-l1.
    """
    names = [n for n in names if n]
    nodes = sorted(nodes)
    node = re.compile(r'(?<![\w-])(%s)(?![\w-])' % '|'.join(
        re.escape(n) for n in nodes) if nodes else r'(?!)')
    return lambda text: bool(node.search(text)) or any(
        name in text for name in names)
