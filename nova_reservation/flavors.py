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

"""Nova's flavors, as the hook and the lease API look them up."""

from typing import Callable, Optional

from nova.api.openstack import common as nova_common
from nova import exception as nova_exception
from nova import objects

from nova_reservation import capacity
from nova_reservation import compat


def find(ctx, flavor_id: str) -> Optional["objects.Flavor"]:
    """The flavor with that flavor id (not deleted), or None."""
    try:
        return compat.flavor_by_flavor_id(ctx, flavor_id, read_deleted='no')
    except nova_exception.FlavorNotFound:
        return None


def id_of_ref(flavor_ref) -> Optional[str]:
    """The flavor id a boot's ``flavorRef`` (an id or a link) names, or
    None (no usable flavorRef).
    """
    if not isinstance(flavor_ref, (str, int)):
        return None
    return nova_common.get_id_from_href(str(flavor_ref))


def of_ref(ctx, flavor_ref) -> Optional["objects.Flavor"]:
    """The flavor a boot's ``flavorRef`` names, or None (none such, or no
    usable flavorRef).
    """
    flavor_id = id_of_ref(flavor_ref)
    return None if flavor_id is None else find(ctx, flavor_id)


def need_finder(ctx) -> Callable:
    """flavor id -> what a server of that flavor takes, or None (no such
    flavor for this context); each flavor read once (a request may name
    one in each of its reservations).
    """
    found: dict = {}

    def need(flavor_id: str) -> Optional[capacity.Resources]:
        if flavor_id not in found:
            flavor = find(ctx, flavor_id)
            found[flavor_id] = flavor and capacity.need_of_flavor(flavor)
        return found[flavor_id]
    return need
