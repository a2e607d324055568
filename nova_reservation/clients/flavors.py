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
from urllib import parse

from nova.api.openstack import common as nova_common
from nova import exception as nova_exception
from nova import objects
from nova.scheduler import utils as scheduler_utils

from nova_reservation import capacity
from nova_reservation import compat
from nova_reservation import exception


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


# Flavor extra specs that ask for devices outside of Placement's query
# (the PCI filter's, Cyborg's), by what a refusal calls them.
DEVICE_SPECS = {'pci_passthrough:alias': 'PCI devices',
                'accel:device_profile': 'Cyborg device profile'}


def asked(resource_request) -> tuple:
    """What a server asks Placement for, as Nova's scheduler sends it
    (``GET /allocation_candidates``): ({resource class: amount} over every
    request group, the traits its providers must have (``X``) or not have
    (``!X``), sorted, [the query's other conditions on providers]).
    """
    amounts: dict = {}
    traits = set()
    conditions = []
    for key, value in parse.parse_qsl(resource_request.to_querystring()):
        if key.startswith('resources'):
            for item in value.split(','):
                rc, amount = item.split(':')
                amounts[rc] = amounts.get(rc, 0) + int(amount)
                if key != 'resources' and (
                        rc not in capacity.RESOURCE_CLASSES):
                    # A numbered group may be given a child provider.
                    conditions.append('%s in request group %s'
                                      % (item, key[len('resources'):]))
        elif key.startswith(('required', 'root_required')):
            if value.startswith('in:'):
                conditions.append('any trait of ' + value[3:])
            else:
                traits.update(value.split(','))
        elif key not in ('limit', 'group_policy'):
            # member_of, in_tree, same_subtree: which providers.
            conditions.append('%s=%s' % (key, value))
    return amounts, tuple(sorted(traits)), conditions


def resource_request(flavor, volume_backed: bool = False,
                     pinning_as_pcpu: bool = True):
    """Nova's `ResourceRequest` for a server of `flavor` (no image)."""
    return scheduler_utils.ResourceRequest.from_request_spec(
        objects.RequestSpec(
            flavor=flavor, is_bfv=volume_backed,
            image=objects.ImageMeta(properties=objects.ImageMetaProps()),
            requested_resources=[],
            request_level_params=objects.RequestLevelParams()),
        enable_pinning_translate=pinning_as_pcpu)


def asked_of(flavor, volume_backed: bool = False,
             pinning_as_pcpu: bool = True) -> tuple:
    """`asked` of a server of `flavor`, its devices asked outside of
    Placement among the conditions (a server whose root disk is a volume
    takes none of the node's disk); `exception.Uncounted` if Nova refuses
    the flavor without an image.
    """
    try:
        amounts, traits, conditions = asked(resource_request(
            flavor, volume_backed, pinning_as_pcpu))
    except (nova_exception.NovaException, ValueError) as e:
        raise exception.Uncounted('is refused by Nova: %s' % e)
    specs = flavor.extra_specs or {}
    conditions.extend('%s %s' % (name, specs[key])
                      for key, name in sorted(DEVICE_SPECS.items())
                      if key in specs)
    return amounts, traits, conditions


def need(flavor, volume_backed: bool = False) -> capacity.Need:
    """What a server of `flavor` takes and the traits of the node it
    takes it from, as Nova asks Placement for them, or
    `exception.Uncounted` naming what a lease's slot cannot hold.

    A slot's classes are its node's own (the root provider's), so the
    traits asked of the providers of any group are the node's.
    """
    amounts, traits, conditions = asked_of(flavor, volume_backed)
    resources, extras = capacity.need_of(amounts, conditions)
    return capacity.Need(resources, traits, extras)


def counted(flavor, volume_backed: bool = False) -> capacity.Resources:
    """What an ordinary boot of `flavor` takes of the classes the ledger
    counts; `exception.Uncounted` if Nova refuses the flavor without an
    image.

    A pinned server's CPUs count as vCPUs: where no node has PCPU for it,
    Nova asks for VCPU instead ([workarounds] disable_fallback_pcpu_query,
    off by default), and it must not take the vCPUs that leases hold.
    """
    return capacity.counted(asked_of(flavor, volume_backed,
                                     pinning_as_pcpu=False)[0])


def need_of_request(spec_obj) -> capacity.Resources:
    """What the server of a scheduler's request takes of the classes the
    ledger counts (a pinned server's CPUs as vCPUs, as in `counted`).
    """
    return capacity.counted(asked(
        scheduler_utils.ResourceRequest.from_request_spec(
            spec_obj, enable_pinning_translate=False))[0])


def asked_of_request(spec_obj) -> dict:
    """What the server of a scheduler's request asks Placement for
    ({class: amount} over its groups; dedicated CPUs as PCPU, as Nova asks
    for them first): `capacity.root_extras` of it is what it asks beyond
    vCPU, RAM and disk, as a slot's extras on its node's own provider.
    """
    return asked(
        scheduler_utils.ResourceRequest.from_request_spec(spec_obj))[0]


def need_finder(ctx) -> Callable:
    """flavor id -> what a server of that flavor takes (`need`), or None
    (no such flavor for this context), or `exception.Uncounted`; each
    flavor read once (a request may name one in each of its reservations).
    """
    found: dict = {}

    def need_of_id(flavor_id: str) -> Optional[capacity.Need]:
        if flavor_id not in found:
            flavor = find(ctx, flavor_id)
            try:
                found[flavor_id] = flavor and need(flavor)
            except exception.Uncounted as e:
                found[flavor_id] = e
        if isinstance(found[flavor_id], exception.Uncounted):
            raise found[flavor_id]
        return found[flavor_id]
    return need_of_id
