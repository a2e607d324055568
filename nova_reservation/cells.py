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
reconciler before it deletes such a server.
"""

from nova import context as nova_context
from nova import exception as nova_exception
from nova.network import neutron
from nova import objects
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def clear_cut_off(uuid: str) -> None:
    """Remove the record and ports that a boot cut off (nova-api killed)
    left of server `uuid` in a cell before mapping it there.

    Nova's delete of such a server removes its build request only: it
    looks for the record outside the cells, and where it finds it there
    destroys it without its ports.  Called before that delete.
    """
    context = nova_context.get_admin_context()
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(context, uuid)
        objects.BuildRequest.get_by_instance_uuid(context, uuid)
    except (nova_exception.InstanceMappingNotFound,
            nova_exception.BuildRequestNotFound):
        return   # never made, or made whole: Nova's delete does the rest
    if mapping.cell_mapping is not None:
        return
    for cell in objects.CellMappingList.get_all(context):
        if cell.is_cell0():
            continue
        with nova_context.target_cell(context, cell) as cctxt:
            try:
                instance = objects.Instance.get_by_uuid(
                    cctxt, uuid, expected_attrs=['info_cache'])
            except nova_exception.InstanceNotFound:
                continue
            neutron.API().deallocate_for_instance(cctxt, instance)
            instance.destroy()
            LOG.warning('Server %s: its record and ports left in cell %s by '
                        'a boot cut off are removed', uuid, cell.uuid)
