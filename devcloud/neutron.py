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

"""Nova's stand-in for Neutron in the embedded cloud, with what Neutron
also does that nova-reservation asks of it (`NeutronFixture`).
"""

import copy
import uuid

from neutronclient.common import exceptions as neutron_client_exc
from nova.tests import fixtures as nova_fixtures
from oslo_utils import timeutils


class NeutronFixture(nova_fixtures.NeutronFixture):
    """Nova's stand-in for Neutron, which also takes what Neutron takes: a
    port that has no host told that it has none (a reserved server's port
    is made before it has a host); and an external network, ``public``,
    whose floating IPs are kept as Neutron keeps them (addresses of its
    subnet, each once).  ``down = True`` makes every floating IP call and
    network look-up fail as an unreachable Neutron does.
    """
    public_network = {
        'id': '5e4c1a2b-0f43-4d5e-9a61-7b8c9d0e1f2a', 'name': 'public',
        'description': '', 'status': 'ACTIVE', 'admin_state_up': True,
        'tenant_id': 'admin-project', 'project_id': 'admin-project',
        'shared': False, 'router:external': True, 'mtu': 1500,
        'subnets': ['6f5d2b3c-1a54-4e6f-8b72-8c9d0e1f2a3b']}
    public_subnet = {
        'id': '6f5d2b3c-1a54-4e6f-8b72-8c9d0e1f2a3b', 'name': 'public',
        'network_id': public_network['id'], 'ip_version': 4,
        'cidr': '172.24.4.0/24', 'gateway_ip': '172.24.4.1',
        'allocation_pools': [{'start': '172.24.4.10',
                              'end': '172.24.4.99'}],
        'tenant_id': 'admin-project', 'project_id': 'admin-project'}

    def __init__(self, test) -> None:
        super().__init__(test)
        self._networks[self.public_network['id']] = self.public_network
        self._subnets[self.public_subnet['id']] = self.public_subnet
        self._floatingips: dict = {}
        self.down = False

    def _reachable(self) -> None:
        if self.down:
            raise neutron_client_exc.ConnectionFailed(
                reason='the network service is down')

    def _get_client(self, context, admin=False):
        if self.down:
            return _Unreachable()
        return super()._get_client(context, admin)

    def show_network(self, network_id, **_params):
        self._reachable()
        return super().show_network(network_id, **_params)

    def list_floatingips(self, retrieve_all=True, **_params):
        self._reachable()
        return {'floatingips': self._list_resource(
            self._floatingips, retrieve_all, **_params)}

    def create_floatingip(self, body=None):
        self._reachable()
        fip = dict(body['floatingip'])
        address = fip.get('floating_ip_address')
        if any(f['floating_ip_address'] == address
               for f in self._floatingips.values()):
            raise neutron_client_exc.Conflict(
                message='IP address %s already allocated' % address)
        fip.update(id=str(uuid.uuid4()), port_id=None, fixed_ip_address=None,
                   status='DOWN', tags=[],
                   tenant_id=fip.get('project_id'))
        fip.setdefault('description', '')
        self._floatingips[fip['id']] = fip
        return {'floatingip': copy.deepcopy(fip)}

    def update_floatingip(self, floatingip_id, body=None):
        self._reachable()
        if floatingip_id not in self._floatingips:
            raise neutron_client_exc.NotFound()
        self._floatingips[floatingip_id].update(body['floatingip'])
        return {'floatingip': copy.deepcopy(
            self._floatingips[floatingip_id])}

    def delete_floatingip(self, floatingip_id):
        self._reachable()
        if self._floatingips.pop(floatingip_id, None) is None:
            raise neutron_client_exc.NotFound()

    def replace_tag(self, resource_type, resource_id, body):
        self._reachable()
        if resource_type != 'floatingips' or \
                resource_id not in self._floatingips:
            raise neutron_client_exc.NotFound()
        self._floatingips[resource_id]['tags'] = list(body['tags'])
        return body

    def create_port(self, body=None):
        made = super().create_port(body)
        # As Neutron stamps it (to the second).
        self._ports[made['port']['id']]['created_at'] = made['port'][
            'created_at'] = timeutils.utcnow().strftime('%Y-%m-%dT%H:%M:%SZ')
        return made

    def update_port(self, port_id, body=None):
        port = (body or {}).get('port', {})
        if ('binding:host_id' in port and port['binding:host_id'] is None
                and self._get_active_binding(port_id)[0] is None):
            body = dict(body, port={k: v for k, v in port.items()
                                    if k != 'binding:host_id'})
        return super().update_port(port_id, body)


class _Unreachable:
    """A client of a Neutron that does not answer."""

    def __getattr__(self, name):
        def call(*args, **kwargs):
            raise neutron_client_exc.ConnectionFailed(
                reason='the network service is down')
        return call
