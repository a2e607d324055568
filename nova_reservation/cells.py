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

"""What a reserved boot cut off (its nova-api killed) left in Nova's cells,
which Nova's own delete of the server leaves: used by the engine's
reconciler after that delete.
"""

from nova import context as nova_context
from nova import exception as nova_exception
from nova.network import neutron
from nova import objects
from oslo_log import log as logging
from oslo_utils import timeutils

LOG = logging.getLogger(__name__)


def clear_cut_off(uuid: str) -> None:
    """Remove the record and ports that a boot cut off left of server
    `uuid` in a cell before mapping it there.

    Called once Nova has deleted the server: its delete removed the build
    request (so that the boot, were it still alive, can no longer map the
    server and undoes itself), looked for the record outside the cells
    only, and destroyed what it found there without its ports.
    """
    context = nova_context.get_admin_context(read_deleted='yes')
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(context, uuid)
    except nova_exception.InstanceMappingNotFound:
        return
    if mapping.cell_mapping is not None:
        return   # made whole: Nova's delete removed it with its ports
    for cell in objects.CellMappingList.get_all(context):
        if cell.is_cell0():
            continue
        with nova_context.target_cell(context, cell) as cctxt:
            try:
                instance = objects.Instance.get_by_uuid(
                    cctxt, uuid, expected_attrs=['info_cache'])
            except nova_exception.InstanceNotFound:
                continue
            neutron.API().deallocate_for_instance(
                cctxt, instance, requested_networks=_users_ports(instance))
            if not instance.deleted:
                instance.destroy()
            LOG.warning('Server %s: its record and ports left in cell %s by '
                        'a boot cut off are removed', uuid, cell.uuid)


def _users_ports(instance) -> 'objects.NetworkRequestList':
    """The ports bound to `instance` that were made before it: the user's
    (``--nic port-id``), given back, not deleted.  The server's network
    cache says so only once the boot wrote it, which a boot cut off may
    not have done.
    """
    client = neutron.get_client(nova_context.get_admin_context(),
                                admin=True)
    made = instance.created_at
    return objects.NetworkRequestList(objects=[
        objects.NetworkRequest(port_id=port['id'])
        for port in client.list_ports(device_id=instance.uuid)['ports']
        if port.get('created_at') and
        timeutils.normalize_time(timeutils.parse_isotime(
            port['created_at'])) < timeutils.normalize_time(made)])
