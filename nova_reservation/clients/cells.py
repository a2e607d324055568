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

"""Nova's cells as leases meet them.

Nova builds a server only in the cell it was made in: the servers of a
lease wait in one cell, and their slots keep to its nodes (`locate`,
`of_server`, `nodes_of`).  And what a reserved boot cut off (its nova-api
killed) left in a cell, which Nova's own delete of the server leaves, is
removed by the engine's reconciler after that delete (`clear_cut_off`).
"""

from typing import Optional

from nova import context as nova_context
from nova import exception as nova_exception
from nova.network import neutron
from nova import objects
from oslo_db import exception as db_exception
from oslo_log import log as logging
from oslo_utils import timeutils

from nova_reservation.exception import CellUnreachable

LOG = logging.getLogger(__name__)


def locate(context, node: str) -> tuple:
    """(host, cell mapping) of the compute node `node`, in any cell."""
    found = nova_context.scatter_gather_skip_cell0(
        context, objects.ComputeNode.get_by_nodename, node)
    for result in found.values():
        if isinstance(result, objects.ComputeNode):
            return result.host, objects.HostMapping.get_by_host(
                context, result.host).cell_mapping
    raise nova_exception.ComputeHostNotFound(host=node)


def with_servers(context) -> list:
    """The cells that hold servers (not cell0), in Nova's order."""
    found = [c for c in objects.CellMappingList.get_all(context)
             if not c.is_cell0()]
    if not found:
        raise nova_exception.CellMappingNotFound(uuid='(any)')
    return found


def of_server(uuid: str) -> Optional[str]:
    """The uuid of the cell server `uuid` was made in; None while it is in
    none (a build request) or unknown.
    """
    context = nova_context.get_admin_context()
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(context, uuid)
    except nova_exception.InstanceMappingNotFound:
        return None
    return mapping.cell_mapping.uuid if mapping.cell_mapping else None


def nodes_of(cell_uuid: str) -> frozenset:
    """The compute nodes of cell `cell_uuid` (its own database's);
    CellUnreachable.
    """
    context = nova_context.get_admin_context()
    try:
        cell = objects.CellMapping.get_by_uuid(context, cell_uuid)
        with nova_context.target_cell(context, cell) as cctxt:
            return frozenset(n.hypervisor_hostname for n in
                             objects.ComputeNodeList.get_all(cctxt))
    except db_exception.DBError as e:
        raise CellUnreachable('the database of cell %s could not be read: %s'
                              % (cell_uuid, e))


def readable(found: list) -> list:
    """[(cell mapping, its nodes)] of the cells `found` whose database
    answers, the others left out (and logged); CellUnreachable if none does.
    """
    answered, error = [], None
    for cell in found:
        try:
            answered.append((cell, nodes_of(cell.uuid)))
        except CellUnreachable as e:
            LOG.warning('Cell %s left out: %s', cell.uuid, e)
            error = e
    if error is not None and not answered:
        raise error
    return answered


def neighbours(node: str) -> Optional[frozenset]:
    """The nodes of the cell of `node` (Nova moves a server only within
    its cell); None where Nova does not know the node; CellUnreachable.
    """
    found = node_cells([node])
    return nodes_of(found[node]) if node in found else None


def node_cells(nodes) -> dict:
    """{node: its cell's uuid} of those of `nodes` Nova knows."""
    context = nova_context.get_admin_context()
    found = {}
    for node in set(nodes):
        try:
            found[node] = locate(context, node)[1].uuid
        except (nova_exception.ComputeHostNotFound,
                nova_exception.HostMappingNotFound):
            pass   # gone: nothing keeps to it
    return found


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
