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

"""What must hold on the local cloud after any integration test
(`devcloud.invariants`), read through its APIs and its store.
"""

import time
from typing import Callable, Optional

from devcloud import invariants
from devcloud import lanes
from devcloud.localcloud import cloud


class InvariantChecks:
    """Mixed into a test case of the local cloud that has
    ``admin_session()``, ``_store`` (an engine of the reservation store),
    ``earlier`` (what did not hold before the test began), ``suffix`` (in
    the names of what it makes), ``store()``, ``rest()``, ``lane_nodes()``
    and ``alone_on_cloud()``.
    """

    def owner(self) -> Optional[Callable[[str], bool]]:
        """Whether a violation of the invariants names what this test
        owns: its lane's nodes, its leases (named with its suffix), their
        slots and servers, and its servers; None when nothing runs beside
        it, and every violation is its own.  The other lanes' are theirs
        (and the last test's, `LAST`, which checks the whole cloud).
        """
        if self.alone_on_cloud():
            return None
        like = '%' + self.suffix + '%'
        names = set()
        for row in self.store(
                'SELECT l.id AS lease, r.id AS reservation, '
                'b.instance_uuid AS server FROM rsv_leases l '
                'LEFT JOIN rsv_reservations r ON r.lease_id = l.id '
                'LEFT JOIN rsv_server_bindings b ON b.lease_id = l.id '
                'WHERE l.name LIKE %s', like):
            names.update(v for v in row.values() if v)
        names.update('slot %d ' % row['id'] for row in self.store(
            'SELECT a.id FROM rsv_allocations a JOIN rsv_reservations r '
            'ON r.id = a.reservation_id JOIN rsv_leases l ON '
            'l.id = r.lease_id WHERE l.name LIKE %s', like))
        # (A suffix is letters, digits, _ and -: nothing Nova's name
        # filter, a regular expression, reads otherwise.)
        names.update(s['id'] for s in self.rest(
            '%s/servers?all_tenants=1&name=%s' % (
                cloud.url('nova'), self.suffix))['servers'])
        names.add(self.suffix)
        return lanes.names_any(names, self.lane_nodes())

    def violations(self, pending: Optional[Callable] = None) -> list:
        """What does not hold on the cloud now (`devcloud.invariants`;
        `pending`: which leases are being written, not answered yet).
        """
        admin = self.admin_session()

        def placement(path: str) -> dict:
            return admin.get(cloud.url('placement') + path, headers={
                'OpenStack-API-Version': 'placement 1.14'}).json()

        def network(kind: str) -> list:
            return admin.get('%s/v2.0/%s' % (cloud.url('network'), kind)
                             ).json()[kind.replace('-', '_')]
        volume = admin.get_endpoint(service_type='volumev3',
                                    interface='public')
        servers = admin.get(
            cloud.url('nova') + '/servers/detail?all_tenants=1',
            headers={'OpenStack-API-Version': 'compute 2.91'}).json()[
            'servers']
        return invariants.violations(
            self._store, servers, placement, engines=True,
            ports=network('ports'), floating_ips=network('floatingips'),
            volumes=admin.get(volume + '/volumes/detail', params=dict(
                all_tenants=1)).json()['volumes'],
            attachments=admin.get(
                volume + '/attachments/detail',
                params=dict(all_tenants=1), headers={
                    'OpenStack-API-Version': 'volume 3.27'}).json()[
                'attachments'], pending=pending)

    def assert_invariants(self, timeout: float = 180) -> None:
        """What must hold on the cloud after any scenario, once the engines
        have done what is due; what held not before the test, or is
        another lane's, is left out.
        """
        deadline = time.time() + timeout
        while True:
            found = [v for v in self.violations() if v not in self.earlier]
            owns = self.owner() if found else None
            if owns is not None:
                found = [v for v in found if owns(v)]
            if not found:
                return
            if time.time() > deadline:
                self.fail('invariants that do not hold: %s' % found)
            time.sleep(5)
