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

"""Neutron, for floating IP reservations: through Nova's own client of it
(nova.conf's ``[neutron]`` section), as an admin, in nova-api (registering
an address) and in the engine (a lease's floating IPs at its start and
end).

A floating IP that a lease made carries the reservation in its
description from its creation on (one write: an engine that dies after it
finds it again) and in its tags, as Blazar's do.
"""

import ipaddress
from typing import Optional

from keystoneauth1 import exceptions as ks_exceptions
from neutronclient.common import exceptions as neutron_exceptions
from nova import context as nova_context
from nova.network import neutron as nova_neutron

from nova_reservation.exception import AddressUnusable
from nova_reservation.exception import NeutronUnavailable
from nova_reservation.lease import floatingips

# What Neutron or the way to it can fail with.
FAILURES = (neutron_exceptions.NeutronClientException,
            ks_exceptions.ClientException)


def _client():
    return nova_neutron.get_client(nova_context.get_admin_context(),
                                   admin=True)


def mark(reservation_id: str) -> str:
    """The description of a floating IP that a reservation made."""
    return 'reservation:%s' % reservation_id


def subnet_for(network_id: str, address: str) -> str:
    """The id of the subnet of external network `network_id` that holds
    `address`, an address Neutron does not give out itself (outside the
    subnet's allocation pools and gateway), that it can make a floating IP
    of (not the subnet's network or broadcast address) and that nothing
    uses; AddressUnusable otherwise, NeutronUnavailable if Neutron failed.
    """
    ip = ipaddress.ip_address(address)
    try:
        client = _client()
        try:
            network = client.show_network(network_id)['network']
        except neutron_exceptions.NotFound:
            raise AddressUnusable('floating_network_id', 'network %s not found'
                                  % network_id)
        if not network.get('router:external'):
            raise AddressUnusable(
                'floating_network_id', 'network %s is not an '
                'external network' % network_id)
        for subnet_id in network.get('subnets', []):
            subnet = client.show_subnet(subnet_id)['subnet']
            if ip not in ipaddress.ip_network(subnet['cidr']):
                continue
            _check_free(client, network_id, subnet, ip)
            return subnet_id
    except FAILURES as e:
        raise NeutronUnavailable('Neutron failed: %s' % e)
    raise AddressUnusable(
        'floating_ip_address', '%s is in no subnet of network %s'
        % (address, network_id))


def _check_free(client, network_id: str, subnet: dict, ip) -> None:
    # A lease would be promised an address whose floating IP fails at its
    # start.
    own = floatingips.subnet_own_address(str(ip), subnet['cidr'])
    if own:
        raise AddressUnusable(
            'floating_ip_address', '%s is %s of subnet %s (%s): '
            'Neutron never gives it' % (ip, own, subnet['id'],
                                        subnet['cidr']))
    if subnet.get('gateway_ip') and ip == ipaddress.ip_address(
            subnet['gateway_ip']):
        raise AddressUnusable(
            'floating_ip_address', '%s is the gateway of subnet %s'
            % (ip, subnet['id']))
    for pool in subnet.get('allocation_pools') or []:
        if ipaddress.ip_address(pool['start']) <= ip <= \
                ipaddress.ip_address(pool['end']):
            raise AddressUnusable(
                'floating_ip_address', '%s is in the allocation '
                'pool of subnet %s, whose addresses Neutron gives '
                'out itself; register addresses outside it'
                % (ip, subnet['id']))
    if client.list_floatingips(floating_network_id=network_id,
                               floating_ip_address=str(ip))['floatingips']:
        raise AddressUnusable(
            'floating_ip_address', '%s is a floating IP in use'
            % ip)
    for port in client.list_ports(network_id=network_id)['ports']:
        if any(f.get('ip_address') == str(ip)
               for f in port.get('fixed_ips', [])):
            raise AddressUnusable(
                'floating_ip_address', '%s is used by port %s'
                % (ip, port['id']))


def _found(client, network_id: str, address: str) -> Optional[dict]:
    found = client.list_floatingips(floating_network_id=network_id,
                                    floating_ip_address=address)
    return next(iter(found['floatingips']), None)


def make(network_id: str, subnet_id: str, address: str, project_id: str,
         reservation_id: str) -> None:
    """Make `address` a floating IP of `project_id` for the reservation,
    unless it is already; AddressUnusable if something else has it,
    NeutronUnavailable if Neutron failed.
    """
    try:
        client = _client()
        fip = _found(client, network_id, address)
        if fip is None:
            fip = client.create_floatingip({'floatingip': {
                'floating_network_id': network_id, 'subnet_id': subnet_id,
                'floating_ip_address': address, 'project_id': project_id,
                'description': mark(reservation_id)}})['floatingip']
        elif fip.get('description') != mark(reservation_id):
            raise AddressUnusable(
                'floating_ip_address', '%s is a floating IP of '
                'project %s in Neutron, not made for this lease'
                % (address, fip.get('project_id')))
        if mark(reservation_id) not in (fip.get('tags') or []):
            client.replace_tag('floatingips', fip['id'], {
                'tags': ['reservation', mark(reservation_id)]})
    except FAILURES as e:
        raise NeutronUnavailable('Neutron failed: %s' % e)


def remove(network_id: str, project_id: str, reservation_id: str) -> int:
    """Delete the floating IPs that the reservation made (of its project,
    on its network), whatever they are attached to; how many there were.
    NeutronUnavailable if Neutron failed.
    """
    gone = 0
    try:
        client = _client()
        found = client.list_floatingips(floating_network_id=network_id,
                                        project_id=project_id)
        for fip in found['floatingips']:
            if fip.get('description') != mark(reservation_id):
                continue
            try:
                client.delete_floatingip(fip['id'])
                gone += 1
            except neutron_exceptions.NotFound:
                pass   # deleted meanwhile
    except FAILURES as e:
        raise NeutronUnavailable('Neutron failed: %s' % e)
    return gone
