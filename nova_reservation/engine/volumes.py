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
an engine that dies between two makes nothing twice.  A server deleted
meanwhile (`release`) leaves nothing reserved for it: Nova's delete
reads the mappings before it marks the server deleting, so it may not
see what is recorded, or not yet made, in between.
"""

from typing import Optional

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
import nova.conf
from nova import context as nova_context
from nova import exception as nova_exception
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
        bdms = [b for b in _made_here(cctxt, server_id) if not b.volume_id]
        if not bdms:
            return True
        cinder = _owners_cinder(trust_id)
        if cinder is None:
            # The trust is gone (or its owner's roles): Nova makes them, in
            # the engine's project, as it would without one.
            LOG.warning('Server %s: its volumes are made in the engine\'s '
                        'project: the owner\'s trust can not be used',
                        server_id)
            return True
        try:
            ready = True
            for bdm in bdms:
                made = _volume(cinder, server_id, bdm)
                if made is None:
                    ready = False
                    continue
                bdm.volume_id, bdm.attachment_id = made
                try:
                    bdm.save()
                except nova_exception.BDMNotFound:
                    # Nova's delete has taken the mappings: `release`,
                    # once the server is gone.
                    return False
            return ready
        except ks_exceptions.ClientException as e:
            raise VolumeFailed('Cinder could not be reached: %s' % e)


def release(trust_id: str, server_id: str) -> bool:
    """Undo `prepare` for server `server_id`, once deleted: the
    attachments made for it go, and each volume whose mapping says
    delete_on_termination.  True once done, False while Cinder still
    makes one or can not be reached (look again); VolumeFailed if it
    refuses.
    """
    context = nova_context.get_admin_context(read_deleted='yes')
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(context,
                                                               server_id)
        with nova_context.target_cell(context,
                                      mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, server_id)
            if not instance.deleted:
                return True   # not gone: its mappings are Nova's
            bdms = _made_here(cctxt, server_id)
    except (nova_exception.InstanceMappingNotFound,
            nova_exception.InstanceNotFound):
        return True   # archived: long gone
    # Without the trust, nothing here was made as the owner.
    cinder = _owners_cinder(trust_id) if bdms else None
    if cinder is None:
        return True
    try:
        done = True
        for bdm in bdms:
            done = _release(cinder, server_id, bdm) and done
        return done
    except ks_exceptions.ClientException as e:
        LOG.info('Server %s: its volumes are released once Cinder can be '
                 'reached: %s', server_id, e)
        return False


def _made_here(cctxt, server_id: str) -> list:
    """The server's block device mappings of a volume to make."""
    return [b for b in objects.BlockDeviceMappingList.get_by_instance_uuid(
        cctxt, server_id) if b.destination_type == 'volume' and
        b.source_type in SOURCES]


def _owners_cinder(trust_id: str) -> Optional[ks_adapter.Adapter]:
    """Cinder as the owner of `trust_id`; None if the trust no longer
    serves.
    """
    try:
        cinder = _cinder(trust_id)
        cinder.get_endpoint()   # authenticates through the trust
        return cinder
    except GONE as e:
        LOG.info('Trust %s can not be used: %s', trust_id, e)
        return None


def _found(cinder, server_id: str, bdm) -> Optional[dict]:
    """The volume made for `bdm`, found by its name."""
    wanted = name(server_id, bdm)
    found = _ok(cinder.get('/volumes/detail', params={'name': wanted},
                           headers=MICROVERSION, raise_exc=False),
                'volume %s' % wanted)['volumes']
    return found[0] if found else None


def _attachment(cinder, server_id: str, volume: dict) -> Optional[str]:
    """The id of `volume`'s attachment for the server."""
    attachments = _ok(cinder.get(
        '/attachments', params={'volume_id': volume['id']},
        headers=MICROVERSION, raise_exc=False), 'volume %s' % volume['id'])[
            'attachments']
    for attachment in attachments:
        if attachment.get('instance') == server_id:
            return attachment['id']
    return None


def _release(cinder, server_id: str, bdm) -> bool:
    volume = _found(cinder, server_id, bdm)
    if volume is None or volume['status'] == 'deleting':
        return True
    if volume['status'] in MAKING:
        return False
    attachment = _attachment(cinder, server_id, volume)
    if attachment is not None:
        gone = cinder.delete('/attachments/%s' % attachment,
                             headers=MICROVERSION, raise_exc=False)
        if gone.status_code != 404:
            _ok(gone, 'attachment %s' % attachment)
    if not bdm.delete_on_termination:
        return True
    resp = cinder.delete('/volumes/%s' % volume['id'], headers=MICROVERSION,
                         raise_exc=False)
    if resp.status_code == 400:
        return False   # not available yet (its attachment just went)
    if resp.status_code != 404:
        _ok(resp, 'volume %s' % volume['id'])
    return True


def _volume(cinder, server_id: str, bdm) -> Optional[tuple]:
    """(volume id, attachment id) of the volume of `bdm` once made and
    reserved for the server; None while Cinder makes it.
    """
    wanted = name(server_id, bdm)
    volume = _found(cinder, server_id, bdm)
    if volume is None:
        _ok(cinder.post('/volumes', json=body(bdm, wanted),
                        headers=MICROVERSION, raise_exc=False),
            'volume %s' % wanted)
        return None
    if volume['status'] in MAKING:
        return None
    attachment = _attachment(cinder, server_id, volume)
    if attachment is not None:
        return volume['id'], attachment
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
