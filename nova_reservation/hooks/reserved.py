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

"""The servers of a future lease, made in Nova as offloaded servers.

A boot whose lease starts later goes through Nova's own API code (its
validation, quota check, build requests, request specs, block device
mappings and tags) up to the point where nova-api hands the build to the
conductor.  There, and for that boot only, this module takes over: each
server is created in the cell of its reserved node in the state of a
shelved and offloaded server (no host, no node, no allocation, no image),
with its ports made on the networks it asked for, and its slot is tied to
it.  At the start the engine unshelves it onto its node, and Nova builds it
from its own image as if it had been booted then.

The Nova internals this relies on (pinned by the unit test
``test_nova_internals``): ``ComputeTaskAPI.schedule_and_build_instances``
of ``nova.conductor.api``, which ``nova.compute.api.API.create`` calls with
the boot's build requests and request specs; unshelving a
``shelved_offloaded`` server without ``shelved_image_id`` in its system
metadata spawns it from its own ``image_ref``; unshelve binds the ports
that exist and makes none.
"""

import copy
import threading
from typing import Iterable, Optional

from nova import availability_zones
from nova.compute import instance_actions
from nova.compute import power_state
from nova.compute import vm_states
from nova.conductor import api as conductor_api
import nova.conf
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova import exception as nova_exception
from nova.network import neutron
from nova import objects
from oslo_db import exception as db_exception
from oslo_log import log as logging
from oslo_utils import timeutils

from nova_reservation.clients import cells
from nova_reservation.db import api as db_api
from nova_reservation.lease import bindings as lease_bindings

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
STORE = db_api.Context()

# {reservation id: its Boot} of the boots in this process that make
# reserved servers; only the hook adds to it, so a hint alone makes none.
_BOOTS: dict = {}
_LOCK = threading.Lock()
_ORIGINAL = None


class Boot:
    """While in a ``with`` block, Nova's build of the servers of
    reservation `reservation_id` makes them reserved, on the nodes of the
    reservation's free `slots`, with `tags` besides the boot's.
    """

    def __init__(self, reservation_id: str, slots: list,
                 tags: Iterable[str] = (),
                 waiting_cell: Optional[str] = None) -> None:
        self.reservation_id = reservation_id
        self.slots = [s for s in slots if s.instance_uuid is None]
        self.tags = list(tags)
        # A waiting lease's servers hold no slot yet: they are made in this
        # cell (its uuid), and take slots on its nodes when it is placed.
        self.waiting_cell = waiting_cell

    def __enter__(self) -> 'Boot':
        install()
        _BOOTS[self.reservation_id] = self
        return self

    def __exit__(self, *exc) -> None:
        _BOOTS.pop(self.reservation_id, None)


def install() -> None:
    """Put `_build` in front of the conductor's build, once per process."""
    global _ORIGINAL
    with _LOCK:
        if _ORIGINAL is None:
            _ORIGINAL = conductor_api.ComputeTaskAPI.\
                schedule_and_build_instances
            conductor_api.ComputeTaskAPI.schedule_and_build_instances = \
                _build


def _build(self, context, build_requests, request_spec, image,
           admin_password, injected_files, requested_networks,
           block_device_mapping, tags=None):
    """The conductor's build, or for a boot of reserved servers (`Boot`),
    their records in the offloaded state.
    """
    specs = list(request_spec)
    boot = _BOOTS.get(specs[0].get_scheduler_hint('reservation')) \
        if specs else None
    if boot is None:
        return _ORIGINAL(self, context, build_requests, specs, image,
                         admin_password, injected_files, requested_networks,
                         block_device_mapping, tags)
    make(context, boot, build_requests, specs, requested_networks,
         block_device_mapping, tags)


def make(context, boot: Boot, build_requests: list, specs: list,
         requested_networks, block_device_mapping, tags) -> None:
    """Create each server of the boot offloaded, in the cell of its slot's
    node; on any failure, nothing of the boot is left.
    """
    waiting = boot.waiting_cell is not None
    if len(build_requests) > len(boot.slots) and not waiting:
        # The hook reserved a slot for each server it let Nova make.
        raise ValueError('%d servers for %d slots' % (len(build_requests),
                                                      len(boot.slots)))
    places: dict = {}
    made = []
    slots = [None] * len(build_requests) if waiting else boot.slots
    try:
        for build_request, spec, slot in zip(build_requests, specs, slots):
            node = slot.node if slot else None
            if node not in places:
                places[node] = (cells.locate(context, node) if node else (
                    None, objects.CellMapping.get_by_uuid(
                        context, boot.waiting_cell)))
            host, cell = places[node]
            instance = build_request.get_new_instance(context)
            instance.vm_state = vm_states.SHELVED_OFFLOADED
            instance.task_state = None
            instance.power_state = power_state.NOSTATE
            instance.host = instance.node = None
            # Nova acts on launched servers only (unshelve included); the
            # start's spawn sets it again.
            instance.launched_at = timeutils.utcnow()
            instance.availability_zone = (
                availability_zones.get_host_availability_zone(context, host)
                if host else CONF.default_availability_zone)
            with nova_context.target_cell(context, cell) as cctxt:
                with instance.obj_alternate_context(cctxt):
                    instance.create()
                made.append((instance, cell))
                objects.InstanceAction.action_start(
                    cctxt, instance.uuid, instance_actions.CREATE,
                    want_result=False)
                _block_devices(cctxt, instance, block_device_mapping)
                objects.TagList.create(cctxt, instance.uuid, [
                    t.tag for t in tags or ()] + boot.tags)
                if not (requested_networks and
                        requested_networks.no_allocate):   # --nic none
                    with instance.obj_alternate_context(cctxt):
                        neutron.API().allocate_for_instance(
                            cctxt, instance, requested_networks,
                            security_groups=[s.identifier
                                             for s in spec.security_groups])
                objects.InstanceAction.action_finish(
                    cctxt, instance.uuid, want_result=False)
            # One transaction: a nova-api killed between the two would leave
            # a build request that Nova lists and can not delete.
            with api_db_api.context_manager.writer.using(context):
                mapping = objects.InstanceMapping.get_by_instance_uuid(
                    context, instance.uuid)
                mapping.cell_mapping = cell
                mapping.save()
                with build_request.obj_alternate_context(context):
                    build_request.destroy()
            if slot:
                lease_bindings.bind_slot(boot.reservation_id,
                                         instance.uuid, slot.node, host)
    except Exception as e:
        LOG.exception('Reserved servers of reservation %s could not be '
                      'made; none is left', boot.reservation_id)
        _undo(context, made, build_requests, specs)
        if isinstance(e, db_exception.DBDataError):
            # Nova's API let through what its tables can not hold (such as
            # four-byte UTF-8 in MySQL): the request's fault.
            raise nova_exception.InvalidMetadata(
                reason='the server\'s name, metadata or tags hold what the '
                       'compute database can not store') from e
        raise


def _block_devices(cctxt, instance, block_device_mapping) -> None:
    """The boot's block device mappings, as the conductor records them
    (swap and ephemeral disks sized from the flavor).
    """
    flavor = instance.flavor
    for bdm in copy.deepcopy(block_device_mapping or []):
        if (bdm.get('volume_size') is None and
                bdm.get('source_type') == 'blank' and
                bdm.get('destination_type') == 'local'):
            bdm.volume_size = (flavor.swap if bdm.get('guest_format') ==
                               'swap' else flavor.ephemeral_gb)
        bdm.instance_uuid = instance.uuid
        with bdm.obj_alternate_context(cctxt):
            bdm.update_or_create()


def _undo(context, made: list, build_requests: Iterable, specs: Iterable
          ) -> None:
    """Remove what a failed boot of reserved servers made: servers, ports,
    build requests, mappings and request specs.
    """
    for instance, cell in made:
        with nova_context.target_cell(context, cell) as cctxt:
            _quietly(neutron.API().deallocate_for_instance, cctxt, instance)
            with instance.obj_alternate_context(cctxt):
                _quietly(instance.destroy)
    for build_request in build_requests:
        _quietly(build_request.destroy)
    for spec in specs:
        _quietly(_destroy_mapping, context, spec.instance_uuid)
        _quietly(spec.destroy)


def _destroy_mapping(context, uuid: str) -> None:
    objects.InstanceMapping.get_by_instance_uuid(context, uuid).destroy()


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception as e:   # Already gone, or left for the reconciler.
        LOG.debug('Undoing a reserved boot: %s', e)
