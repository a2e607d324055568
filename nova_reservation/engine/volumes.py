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

"""The new volumes a reserved server boots with, made as its owner at the
start.

Nova makes the volume of a block device ``source=image|blank|snapshot,
dest=volume`` in nova-compute, in the context of the request that builds
the server: for a reserved server, the engine's unshelve, so the volume
would be the engine's project's.  With the lease's trust (`trusts`), the
engine makes each such volume in Cinder as the owner first, reserves it
for the server (an attachment, as nova-api does for a volume given by
id) and records both in the server's block device mapping; the unshelve
then attaches it as it attaches any volume.

Each step is found again on the next look (the volume by its name), so
an engine that dies between two makes nothing twice.
"""

from typing import Optional

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
import nova.conf
from nova import context as nova_context
from nova import objects
from oslo_log import log as logging

from nova_reservation.clients import trusts
from nova_reservation.exception import VolumeFailed

LOG = logging.getLogger(__name__)
NOVA_CONF = nova.conf.CONF
# What keystoneauth raises when a trust no longer serves.
GONE = (ks_exceptions.Unauthorized, ks_exceptions.Forbidden,
        ks_exceptions.NotFound)
MICROVERSION = {'OpenStack-API-Version': 'volume 3.44'}
SOURCES = ('image', 'blank', 'snapshot')
MAKING = ('creating', 'downloading')


def name(server_id: str, bdm) -> str:
    """The name of the volume made for block device `bdm`."""
    return 'reserved-%s-%s' % (server_id, bdm.uuid)


def body(bdm, volume_name: str) -> dict:
    """Cinder's create request for the volume of block device `bdm`."""
    volume = {'name': volume_name, 'size': bdm.volume_size}
    if bdm.source_type == 'image':
        volume['imageRef'] = bdm.image_id
    elif bdm.source_type == 'snapshot':
        volume['snapshot_id'] = bdm.snapshot_id
    if bdm.volume_type:
        volume['volume_type'] = bdm.volume_type
    return {'volume': volume}


def _cinder(trust_id: str) -> ks_adapter.Adapter:
    service_type, _, interface = NOVA_CONF.cinder.catalog_info.split(':')
    return ks_adapter.Adapter(
        trusts.session(trust_id), service_type=service_type,
        interface=interface.replace('URL', ''),
        region_name=NOVA_CONF.cinder.os_region_name)


def _ok(resp, what: str):
    if resp.status_code >= 400:
        raise VolumeFailed('%s: Cinder answered %d: %s' % (
            what, resp.status_code, resp.text[:200]))
    return resp.json() if resp.content else {}


def prepare(trust_id: str, server_id: str) -> bool:
    """Make, as the owner of `trust_id`, the volumes server `server_id`
    boots with: True once each is made and reserved for it, False while
    Cinder makes one (look again); VolumeFailed.
    """
    context = nova_context.get_admin_context()
    mapping = objects.InstanceMapping.get_by_instance_uuid(context,
                                                           server_id)
    with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
        bdms = [b for b in objects.BlockDeviceMappingList.
                get_by_instance_uuid(cctxt, server_id)
                if b.destination_type == 'volume' and
                b.source_type in SOURCES and not b.volume_id]
        if not bdms:
            return True
        try:
            cinder = _cinder(trust_id)
            cinder.get_endpoint()   # authenticates through the trust
        except GONE as e:
            # The trust is gone (or its owner's roles): Nova makes them, in
            # the engine's project, as it would without one.
            LOG.warning('Server %s: its volumes are made in the engine\'s '
                        'project: the owner\'s trust can not be used: %s',
                        server_id, e)
            return True
        try:
            ready = True
            for bdm in bdms:
                made = _volume(cinder, server_id, bdm)
                if made is None:
                    ready = False
                    continue
                bdm.volume_id, bdm.attachment_id = made
                bdm.save()
            return ready
        except ks_exceptions.ClientException as e:
            raise VolumeFailed('Cinder could not be reached: %s' % e)


def _volume(cinder, server_id: str, bdm) -> Optional[tuple]:
    """(volume id, attachment id) of the volume of `bdm` once made and
    reserved for the server; None while Cinder makes it.
    """
    wanted = name(server_id, bdm)
    found = _ok(cinder.get('/volumes/detail', params={'name': wanted},
                           headers=MICROVERSION, raise_exc=False),
                'volume %s' % wanted)['volumes']
    if not found:
        _ok(cinder.post('/volumes', json=body(bdm, wanted),
                        headers=MICROVERSION, raise_exc=False),
            'volume %s' % wanted)
        return None
    volume = found[0]
    if volume['status'] in MAKING:
        return None
    attachments = _ok(cinder.get(
        '/attachments', params={'volume_id': volume['id']},
        headers=MICROVERSION, raise_exc=False), 'volume %s' % wanted)[
            'attachments']
    for attachment in attachments:
        if attachment.get('instance') == server_id:
            return volume['id'], attachment['id']
    if volume['status'] != 'available':
        if volume['status'] == 'error':
            # Made again on the next try.
            cinder.delete('/volumes/%s' % volume['id'], raise_exc=False,
                          headers=MICROVERSION)
        raise VolumeFailed('volume %s of server %s is %s' % (
            volume['id'], server_id, volume['status']))
    attachment = _ok(cinder.post('/attachments', json={'attachment': {
        'volume_uuid': volume['id'], 'instance_uuid': server_id}},
        headers=MICROVERSION, raise_exc=False),
        'volume %s' % wanted)['attachment']
    return volume['id'], attachment['id']
