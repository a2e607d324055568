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

"""Reserved servers with real Neutron ports and real Cinder volumes, booted
with the real CLIs: what they hold before their start, at it and after
their end.

The flows run side by side in one lease window (each server a lease of
its own, all with the same dates), so that the suite waits once for the
start and once for the end; each flow's failures are told apart.
"""

import functools
import json
import re
import traceback
from typing import Callable, Optional

import testtools

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

# Seconds from the first boot to the start, and the lease's length: room
# for the boots and the checks before the start (about 25 s alone; 65 s
# beside two other lanes and a functional suite; past 100 s, the start
# come before the last boot, on a machine half as fast as usual), and
# for the start's seven builds, four of them with volumes, and their
# checks before the end (about 20 s alone; past 45 s on a machine busy
# with the other suites). The test runs in a lane, beside the others:
# its waits add little to the run.
START = 200
LENGTH = 180


class ReservedPortsAndVolumesTest(base.CloudTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.admin = base.CLOUD.session('admin')
        self.volume_api = self.admin.get_endpoint(
            service_type='volumev3', interface='public')
        # {flow: [failure, ...]}: a flow's failure does not stop the others.
        self.failures: dict = {}

    # ------------------------------------------------------------ helpers
    def check(self, flow: str, step: Callable[[], None]) -> None:
        """Run a flow's step; what it finds wrong is kept for the end."""
        if flow in self.failures:
            return   # its first failure is what it tells
        try:
            step()
        except Exception:
            self.failures[flow] = [traceback.format_exc()]

    def ports(self, **query) -> list:
        return self.admin.get(cloud.url('network') + '/v2.0/ports',
                              params=query).json()['ports']

    def port(self, port_id: str) -> Optional[dict]:
        resp = self.admin.get('%s/v2.0/ports/%s' % (cloud.url('network'),
                                                    port_id),
                              raise_exc=False)
        return None if resp.status_code == 404 else resp.json()['port']

    def attachments(self, server_id: str) -> list:
        """Cinder's attachments (reserved, attaching, attached, ...) for
        a server.
        """
        return [a for a in self.admin.get(
            self.volume_api + '/attachments/detail',
            params=dict(all_tenants=1),
            headers={'OpenStack-API-Version': 'volume 3.27'}).json()[
            'attachments'] if a['instance'] == server_id]

    def volumes(self) -> list:
        """Every project's volumes, as Cinder shows them to admin."""
        return self.admin.get(self.volume_api + '/volumes/detail',
                              params=dict(all_tenants=1)).json()['volumes']

    def api_server(self, server_id: str) -> Optional[dict]:
        return (self.rest('%s/servers/%s' % (cloud.url('nova'), server_id))
                or {}).get('server')

    def boot(self, name: str, *args: str, start: str, end: str,
             on_end: str = 'delete') -> str:
        """`openstack server create` as alice with a lease of its own."""
        server = self.openstack(
            'alice', 'server', 'create', '--flavor', self.flavor('m1.tiny'),
            *args, '--hint', 'lease_params=' + base.lease_params(
                name, start, end, on_end=on_end), name)
        self.addCleanup(self.delete_server, server['id'])
        self.assertEqual('RESERVED', server['status'], server)
        return server['id']

    def shown_address(self, server_id: str) -> Optional[str]:
        """The address on alpha-net that `nova show` shows alice."""
        out = self.run_cli('alice', 'nova', 'show', server_id).stdout
        found = re.search(r'^\| alpha-net network\s+\| (\S+)', out, re.M)
        return found and found.group(1)

    def one_port(self, server_id: str) -> dict:
        found = self.ports(device_id=server_id)
        self.assertEqual(1, len(found), found)
        return found[0]

    def assert_unbound(self, port: dict) -> None:
        self.assertEqual('', port['binding:host_id'], port)
        self.assertEqual('unbound', port['binding:vif_type'], port)

    def assert_bound_to_host(self, port: dict, server: dict) -> None:
        host = server['OS-EXT-SRV-ATTR:host']
        self.assertTrue(host, server)
        self.assertEqual(host, port['binding:host_id'], port)
        self.assertEqual('ovs', port['binding:vif_type'], port)
        self.assertEqual('ACTIVE', port['status'], port)

    def wait_active(self, server_id: str) -> dict:
        self.wait_for_server('%s active' % server_id, server_id,
                             lambda s: s and s['status'] in (
                                 'ACTIVE', 'ERROR'), timeout=180)
        server = self.api_server(server_id)
        self.assertEqual('ACTIVE', server['status'], server)
        return server

    def wait_gone(self, server_id: str) -> None:
        self.wait_for_server('%s deleted' % server_id, server_id,
                             lambda s: s is None, timeout=180)

    # --------------------------------------------------------------- test
    def test_ports_and_volumes_of_reserved_servers(self):
        net = self.network('alice')
        image = self.image_ref()
        # (b) a port of alice's, and (d) a bootable volume of hers.
        own_port = self.openstack('alice', 'port', 'create', '--network',
                                  net, 'own-' + self.suffix)
        self.addCleanup(self.delete, 'network',
                        '/v2.0/ports/' + own_port['id'])
        own_volume = self.openstack('alice', 'volume', 'create', '--size',
                                    '1', '--image', 'cirros',
                                    'own-' + self.suffix)
        self.addCleanup(self.delete, 'volumev3',
                        '/volumes/' + own_volume['id'])
        self.wait_for('volume %s available' % own_volume['id'],
                      lambda: self.volume(own_volume['id'])['status'] ==
                      'available', timeout=60, interval=1)
        alpha = self.openstack('admin', 'project', 'show', 'alpha')['id']
        start, end = base.utc(START), base.utc(START + LENGTH)
        volumes_before = {v['id'] for v in self.volumes()}

        servers = dict(
            # (a) a project network and a security group.
            net=self.boot('net-' + self.suffix, '--image', 'cirros',
                          '--nic', 'net-id=' + net, '--security-group',
                          'default', start=start, end=end),
            # (a) deleted before its start.
            gone=self.boot('gone-' + self.suffix, '--image', 'cirros',
                           '--nic', 'net-id=' + net, start=start, end=end),
            # (b) the user's own port.
            port=self.boot('port-' + self.suffix, '--image', 'cirros',
                           '--nic', 'port-id=' + own_port['id'],
                           start=start, end=end),
            # (c) from the image to a new volume.
            image=self.boot(
                'bfv-' + self.suffix, '--nic', 'net-id=' + net,
                '--block-device', 'source_type=image,uuid=%s,'
                'destination_type=volume,volume_size=1,boot_index=0,'
                'delete_on_termination=true' % image, start=start, end=end),
            # (d) from the user's existing volume.
            volume=self.boot(
                'vol-' + self.suffix, '--nic', 'net-id=' + net,
                '--block-device', 'source_type=volume,uuid=%s,'
                'destination_type=volume,boot_index=0' % own_volume['id'],
                start=start, end=end),
        )
        # (e) and (f): volume-backed servers whose lease ends with shelve
        # and with snapshot.
        for flow in ('shelve', 'snapshot'):
            servers[flow] = self.boot(
                '%s-%s' % (flow, self.suffix), '--nic', 'net-id=' + net,
                '--block-device', 'source_type=image,uuid=%s,'
                'destination_type=volume,volume_size=1,boot_index=0,'
                'delete_on_termination=true' % image, start=start, end=end,
                on_end=flow)
        self.assertGreater(base.seconds_from_now(start), 15,
                           'the boots took the time until the start')
        addresses = {}
        # {volume id: flow} of the volumes made at the start.
        made_volumes = {}

        # Before the start: ports made, unbound; no volume made; the
        # existing volume reserved; nothing on any node.
        def net_before():
            self.assertEqual('RESERVED', self.nova(
                'alice', 'show', servers['net'])['status'])
            port = self.one_port(servers['net'])
            self.assert_unbound(port)
            address = port['fixed_ips'][0]['ip_address']
            self.assertEqual(address, self.shown_address(servers['net']))
            addresses['net'] = address
            groups = self.openstack('alice', 'security', 'group', 'list')
            default = [g['ID'] for g in groups if g['Name'] == 'default']
            self.assertEqual(default, port['security_groups'])
            server = self.api_server(servers['net'])
            self.assertIsNone(server['OS-EXT-SRV-ATTR:host'])
            self.assertEqual({}, self.admin.get(
                cloud.url('placement') + '/allocations/' + servers['net']
            ).json()['allocations'])
        self.check('a: --nic net-id', net_before)

        def gone_before():
            gone = servers['gone']
            port = self.one_port(gone)
            self.assert_unbound(port)
            self.delete_server(gone)
            self.wait_gone(gone)
            self.wait_for('the port of %s deleted' % gone,
                          lambda: self.port(port['id']) is None,
                          timeout=30, interval=1)
        self.check('a: deleted before its start', gone_before)

        def port_before():
            port = self.port(own_port['id'])
            self.assertEqual(servers['port'], port['device_id'], port)
            self.assert_unbound(port)
            addresses['port'] = port['fixed_ips'][0]['ip_address']
        self.check('b: --nic port-id', port_before)

        def image_before():
            server = self.api_server(servers['image'])
            self.assertEqual([], server[
                'os-extended-volumes:volumes_attached'])
            self.assertEqual([], self.attachments(servers['image']))
            # None made for a server of this test (other lanes' tests make
            # theirs meanwhile): none named after one, as the engine names
            # those it makes, nor attached to one (one Nova made would be
            # among the server's volumes, above).
            ours = set(servers.values())
            self.assertEqual([], [
                v for v in self.volumes() if v['id'] not in volumes_before
                and (any(s in (v['name'] or '') for s in ours) or ours & {
                    a['server_id'] for a in v['attachments']})])
            self.assert_unbound(self.one_port(servers['image']))
        self.check('c: image to volume', image_before)

        def volume_before():
            volume = self.volume(own_volume['id'])
            self.assertIn(volume['status'], ('reserved', 'attaching'),
                          volume)
            found = self.attachments(servers['volume'])
            self.assertEqual(1, len(found), found)
            self.assertEqual('reserved', found[0]['status'], found)
        self.check('d: existing volume', volume_before)
        self.assertGreater(base.seconds_from_now(start), 0,
                           'the checks before the start took too long')

        # From the start: built on a node, ports bound to it, same
        # addresses; the volumes attached.
        def net_started():
            server = self.wait_active(servers['net'])
            port = self.one_port(servers['net'])
            self.assert_bound_to_host(port, server)
            self.assertEqual(addresses['net'],
                             port['fixed_ips'][0]['ip_address'])
            self.assertEqual(addresses['net'],
                             self.shown_address(servers['net']))
        self.check('a: --nic net-id', net_started)

        def port_started():
            server = self.wait_active(servers['port'])
            port = self.port(own_port['id'])
            self.assertEqual(servers['port'], port['device_id'])
            self.assert_bound_to_host(port, server)
            self.assertEqual(addresses['port'],
                             port['fixed_ips'][0]['ip_address'])
        self.check('b: --nic port-id', port_started)

        def image_started():
            server = self.wait_active(servers['image'])
            attached = server['os-extended-volumes:volumes_attached']
            self.assertEqual(1, len(attached), attached)
            volume = self.volume(attached[0]['id'])
            self.assertEqual('in-use', volume['status'], volume)
            self.assertEqual('true', volume['bootable'], volume)
            # Made at the start as alice, through the lease's trust.
            self.assertEqual(alpha, volume['os-vol-tenant-attr:tenant_id'],
                             volume)
            self.assertIn(volume['id'], [v['ID'] for v in self.openstack(
                'alice', 'volume', 'list')])
            self.assertEqual([servers['image']], [
                a['server_id'] for a in volume['attachments']])
            self.assert_bound_to_host(self.one_port(servers['image']),
                                      server)
        self.check('c: image to volume', image_started)

        def backed(flow):
            made = self.wait_active(servers[flow])[
                'os-extended-volumes:volumes_attached']
            self.assertEqual(1, len(made), made)
            self.assertEqual(alpha, self.volume(made[0]['id'])[
                'os-vol-tenant-attr:tenant_id'])
            made_volumes[made[0]['id']] = flow
        for flow in ('shelve', 'snapshot'):
            self.check('%s: volume-backed' % flow,
                       functools.partial(backed, flow))

        def volume_started():
            server = self.wait_active(servers['volume'])
            volume = self.volume(own_volume['id'])
            self.assertEqual('in-use', volume['status'], volume)
            self.assertEqual([servers['volume']], [
                a['server_id'] for a in volume['attachments']])
            found = self.attachments(servers['volume'])
            self.assertEqual(['attached'], [a['status'] for a in found])
            self.assert_bound_to_host(self.one_port(servers['volume']),
                                      server)
        self.check('d: existing volume', volume_started)

        # At the end (on_end delete): the servers and the ports Nova made
        # are gone; the user's port and volume are given back.

        def image_volume():
            attached = (self.api_server(servers['image']) or {}).get(
                'os-extended-volumes:volumes_attached') or []
            made_volumes.update((a['id'], 'image') for a in attached)
        self.check('c: image to volume', image_volume)
        for flow in ('net', 'port', 'image', 'volume'):
            self.check('end of %s' % flow,
                       lambda: self.wait_gone(servers[flow]))

        def net_ended():
            self.assertEqual([], self.ports(device_id=servers['net']))
        self.check('a: --nic net-id', net_ended)

        def port_ended():
            port = self.wait_for('port %s given back' % own_port['id'],
                                 lambda: (lambda p: p if p and not p[
                                     'device_id'] else None)(
                                     self.port(own_port['id'])),
                                 timeout=30, interval=1)
            self.assertEqual('', port['device_owner'], port)
            self.assert_unbound(port)
        self.check('b: --nic port-id', port_ended)

        def image_ended():
            self.assertEqual([], self.ports(device_id=servers['image']))
            for volume_id in [v for v, f in made_volumes.items()
                              if f == 'image']:
                self.wait_for('volume %s deleted' % volume_id,
                              lambda: self.volume(volume_id) is None,
                              timeout=60, interval=2)
        self.check('c: image to volume', image_ended)

        def volume_ended():
            self.assertEqual([], self.ports(device_id=servers['volume']))
            self.wait_for('volume %s available' % own_volume['id'],
                          lambda: self.volume(own_volume['id'])[
                              'status'] == 'available', timeout=60,
                          interval=2)
            self.assertEqual([], self.volume(own_volume['id'])[
                'attachments'])
        self.check('d: existing volume', volume_ended)

        def shelve_ended():
            # Offloaded at once (volume-backed), its volume kept for it,
            # its port unbound.
            self.wait_for_server('%s shelved' % servers['shelve'],
                                 servers['shelve'], lambda s: s and s[
                                     'status'] == 'SHELVED_OFFLOADED',
                                 timeout=180)
            self.assertEqual('SHELVED_OFFLOADED', self.nova(
                'alice', 'show', servers['shelve'])['status'])
            kept = [v for v, f in made_volumes.items() if f == 'shelve']
            self.assertEqual(1, len(kept), made_volumes)
            self.assertEqual([servers['shelve']], [
                a['server_id'] for a in self.volume(kept[0])['attachments']
            ] or [a['instance'] for a in self.attachments(
                servers['shelve'])])
            self.assert_unbound(self.one_port(servers['shelve']))
            self.delete_server(servers['shelve'])
            self.wait_gone(servers['shelve'])
        self.check('e: on_end shelve', shelve_ended)

        def snapshot_ended():
            # Nova's snapshot of a volume-backed server: an image of
            # alice's that names a snapshot of its volume, hers too; then
            # the server is deleted.
            self.wait_gone(servers['snapshot'])
            images = [i for i in self.openstack('alice', 'image', 'list')
                      if i['Name'] == 'snapshot-%s-snapshot-%s' % (
                          self.suffix, self.suffix)]
            self.assertEqual(1, len(images), images)
            self.addCleanup(self.delete, 'image',
                            '/v2/images/' + images[0]['ID'])
            shown = self.openstack('admin', 'image', 'show', images[0]['ID'])
            self.assertEqual(alpha, shown['owner'], shown)
            snapshots = [x for x in self.admin.get(
                self.volume_api + '/snapshots/detail', params=dict(
                    all_tenants=1)).json()['snapshots']
                if x['volume_id'] in made_volumes and
                made_volumes[x['volume_id']] == 'snapshot']
            self.assertEqual(1, len(snapshots), snapshots)
            self.assertEqual(alpha, snapshots[0][
                'os-extended-snapshot-attributes:project_id'], snapshots)
            self.assertEqual([], self.ports(device_id=servers['snapshot']))
        self.check('f: on_end snapshot', snapshot_ended)

        def trusts_gone():
            # Each lease had a trust of alice's, deleted at its end.
            rows = self.store('SELECT trust_id FROM rsv_leases WHERE name '
                              'LIKE %s', '%-' + self.suffix)
            self.assertEqual(len(servers), len(rows), rows)
            for trust in {r['trust_id'] for r in rows}:
                self.assertTrue(trust, rows)
                url = '%s/OS-TRUST/trusts/%s' % (cloud.url('keystone'),
                                                 trust)
                self.wait_for(
                    'trust %s deleted' % trust, lambda: self.admin.get(
                        url, raise_exc=False).status_code == 404,
                    timeout=60, interval=2)
        self.check('the leases\' trusts', trusts_gone)

        for flow, found in sorted(self.failures.items()):
            self.addDetail(re.sub(r'\W+', '-', flow),
                           testtools.content.text_content('\n'.join(found)))
        if self.failures:
            self.fail('flows that failed: %s' % json.dumps(
                {flow: found[0][:2000] for flow, found in sorted(
                    self.failures.items())}, indent=1))
