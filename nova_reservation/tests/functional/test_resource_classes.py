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

"""What a server of a flavor takes is what Nova asks Placement for: a
lease's slot holds VCPU, MEMORY_MB and DISK_GB and the other classes of
its node's provider tree, so a flavor that asks for a class no node has
is refused by name (a 409), one that asks for what a slot can not
hold (devices outside of Placement, numbered request groups) with a 400,
on every road into the ledger, never accepted and broken at its start,
while an override of a standard class counts as Nova asks it, and the
traits it asks for choose the nodes of its slots as Placement chooses its
servers'. Leases of such a class where a node has it:
``test_gpu_leases``.
"""

import urllib.parse

from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE
# {flavor id: (its extra specs, what a refusal names)}: what no slot holds
# (a 400).
BEYOND = {
    'pci': ({'pci_passthrough:alias': 'a100:2'}, 'PCI devices a100:2'),
    'isolated': ({'resources1:VGPU': '1', 'resources2:VGPU': '1',
                  'group_policy': 'isolate'},
                 'VGPU:1 in request group 1, VGPU:1 in request group 2'),
}
# What a slot holds where a node has it, and no node here has (a 409).
ABSENT = {
    'g1.a100': ({'resources:CUSTOM_GPU_A100': '1'}, 'CUSTOM_GPU_A100'),
    'g1.vgpu': ({'resources:VGPU': '1'}, 'VGPU'),
    'c1.dedicated': ({'hw:cpu_policy': 'dedicated'}, 'PCPU'),
}
# 100 vCPUs as a flavor (a node has 64 at Nova's ratio of 4), one as
# Placement is asked: `resources:VCPU` overrides the flavor's vcpus.
OVERRIDE = 'override'


class ResourceClassTest(base.BootTestCase):

    def setUp(self) -> None:
        super().setUp()
        for flavor_id, (specs, _) in list(BEYOND.items()) + list(
                ABSENT.items()):
            self._flavor(flavor_id, 1, 512, specs)
        self._flavor(OVERRIDE, 100, 4096, {'resources:VCPU': '1'},
                     **{'OS-FLV-EXT-DATA:ephemeral': 1, 'swap': 512})

    def _flavor(self, flavor_id: str, vcpus: int, ram: int,
                specs: dict, **fields) -> None:
        self.admin_api.post_flavor({'flavor': dict(
            name=flavor_id, id=flavor_id, vcpus=vcpus, ram=ram, disk=1,
            **fields)})
        self.admin_api.post_extra_spec(flavor_id, {'extra_specs': specs})

    def _refusal(self, flavor_id: str) -> str:
        return ('flavor %s asks for %s, which a lease cannot hold (a slot '
                "holds classes of its node's provider tree, asked for "
                'outside of numbered request groups)'
                % (flavor_id, BEYOND[flavor_id][1]))

    @staticmethod
    def _absent(flavor_id: str) -> str:
        return 'no node that may hold it has %s' % ABSENT[flavor_id][1]

    def assert_nothing_written(self) -> None:
        self.assertEqual([], self.leases())
        self.assertEqual([], self.api.get_servers())

    def post_lease(self, flavor_id: str):
        return self.rsv('POST', '/leases', {
            'name': 'l', 'start_date': base.soon(3600),
            'end_date': base.soon(7200), 'reservations': [{
                'resource_type': 'flavor:instance', 'flavor_id': flavor_id,
                'amount': 1, 'affinity': 'None'}]})

    def test_a_lease_of_a_flavor_asking_more_is_refused_by_name(self):
        for flavor_id in BEYOND:
            resp = self.post_lease(flavor_id)
            self.assertEqual(400, resp.status_code, resp.text)
            self.assertEqual('reservations[0].flavor_id: '
                             + self._refusal(flavor_id),
                             resp.json()['error_message'])
        for flavor_id in ABSENT:
            resp = self.post_lease(flavor_id)
            self.assertEqual(409, resp.status_code, resp.text)
            self.assertIn(self._absent(flavor_id),
                          resp.json()['error_message'])
        self.assert_nothing_written()

    def test_a_boot_lease_of_a_flavor_asking_more_is_refused_by_name(self):
        for flavor_id in BEYOND:
            resp = self.boot(base.params(base.when(60), base.when(120)),
                             flavor=flavor_id)
            self.assertEqual(400, resp.status, resp.content)
            self.assertEqual('flavorRef: ' + self._refusal(flavor_id),
                             resp.body['badRequest']['message'])
        for flavor_id in ABSENT:
            resp = self.boot(base.params(base.when(60), base.when(120)),
                             flavor=flavor_id)
            self.assertEqual(409, resp.status, resp.content)
            self.assertIn(self._absent(flavor_id),
                          resp.body['conflictingRequest']['message'])
        self.assert_nothing_written()

    def test_a_boot_into_a_slot_asking_more_is_refused(self):
        rid = self.running_lease(1)
        resp = self.boot_into(rid, flavor='g1.a100')
        self.assertEqual(400, resp.status, resp.content)
        self.assertEqual('flavorRef: the flavor asks for CUSTOM_GPU_A100:1; '
                         'the reserved slots hold none of it',
                         resp.body['badRequest']['message'])
        resp = self.boot_into(rid, flavor='pci')
        self.assertEqual(400, resp.status, resp.content)
        self.assertEqual('flavorRef: ' + self._refusal('pci'),
                         resp.body['badRequest']['message'])
        self.assertEqual({}, self.bound(rid))
        self.assertEqual([], self.api.get_servers())

    def test_the_availability_search_refuses_it_by_name(self):
        resp = self.rsv('GET', '/availability?' + urllib.parse.urlencode(
            dict(flavor_id='isolated', amount=1, duration='1h')))
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('flavor_id: ' + self._refusal('isolated'),
                      resp.json()['error_message'])
        # A class no node has: no window, ever.
        resp = self.rsv('GET', '/availability?' + urllib.parse.urlencode(
            dict(flavor_id='g1.vgpu', amount=1, duration='1h')))
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual((None, []), (
            resp.json()['availability']['earliest_start'],
            resp.json()['availability']['windows']))

    def test_the_calendar_counts_no_free_gpu(self):
        resp = self.rsv('GET', '/ledger')
        self.assertEqual(200, resp.status_code, resp.text)
        free = {f['flavor_id']: f for f in resp.json()['ledger']['free']}
        self.assertIn(base.ONE_PER_NODE, free)
        self.assertEqual(set(), set(BEYOND) & set(free))
        self.assertEqual({0}, {free[f]['steps'][0]['count'] for f in ABSENT})
        # The override's server takes one vCPU and 4 GB: one a node.
        self.assertEqual(1, free[OVERRIDE]['vcpus'])
        self.assertEqual(2, free[OVERRIDE]['steps'][0]['count'])

    def test_an_override_counts_as_nova_asks(self):
        # A flavor of 100 vCPUs never fits a node of 64; Placement is
        # asked for one, and a node holds a slot of it.
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': OVERRIDE, 'amount': 2,
                            'affinity': 'None'}, start=1.0)
        rid = lease['reservations'][0]['id']
        self.assertEqual(1, lease['reservations'][0]['vcpus'])
        slots = db_ledger.slots(STORE, rid)
        self.assertEqual(['host1', 'host2'], sorted(s.node for s in slots))
        # Root, ephemeral and swap disks: 3 GB of the node's.
        self.assertEqual({(1, 4096, 3)},
                         {(s.vcpus, s.memory_mb, s.disk_gb) for s in slots})
        # The reservation's own flavor is a copy of the flavor, the
        # guest's size and the extra specs that ask for the slot's.
        private = self.admin_api.api_get('/flavors/%s' % rid).body['flavor']
        self.assertEqual(
            (100, 4096, 1, 1, 512, {'resources:VCPU': '1'}),
            (private['vcpus'], private['ram'], private['disk'],
             private['OS-FLV-EXT-DATA:ephemeral'], private['swap'],
             private['extra_specs']))
        self.wait_for_start(lease)
        uuids = [self.boot_into(rid, flavor=OVERRIDE).body['server']['id'],
                 # Blazar's way: the reservation's flavor, no hint.
                 self.boot(None, flavor=rid, name='b').body['server']['id']]
        self.assertEqual(['host1', 'host2'],
                         sorted(self.node_of(u) for u in uuids))


class TraitTest(base.BootTestCase):
    """A slot of a flavor that asks for traits goes only to a node that
    Placement would give a server of it (required traits it has,
    forbidden ones it has not), and a boot into it lands there.
    """

    def setUp(self) -> None:
        super().setUp()
        # m1.medium's size: one a node.
        for flavor_id, spec in (('gold', 'required'),
                                ('not-gold', 'forbidden')):
            self.admin_api.post_flavor({'flavor': dict(
                name=flavor_id, id=flavor_id, vcpus=2, ram=4096, disk=1)})
            self.admin_api.post_extra_spec(flavor_id, {'extra_specs': {
                'trait:CUSTOM_GOLD': spec}})
        self._create_trait('CUSTOM_GOLD')

    def gold(self, node: str) -> None:
        rp = self._get_provider_uuid_by_host(node)
        self._set_provider_traits(
            rp, self._get_provider_traits(rp) + ['CUSTOM_GOLD'])

    def post_lease(self, flavor_id: str, amount: int):
        return self.rsv('POST', '/leases', {
            'name': flavor_id, 'start_date': base.soon(1),
            'end_date': base.soon(3600), 'reservations': [{
                'resource_type': 'flavor:instance', 'flavor_id': flavor_id,
                'amount': amount, 'affinity': 'None'}]})

    def nodes(self, lease: dict) -> list:
        return sorted(s.node for s in db_ledger.slots(
            STORE, lease['reservations'][0]['id']))

    def test_no_node_with_the_trait_is_no_capacity(self):
        resp = self.post_lease('gold', 1)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('1 x gold (2 vCPU, 4096 MB RAM, 1 GB disk each, on '
                      'nodes with traits CUSTOM_GOLD)',
                      resp.json()['error_message'])
        self.assertEqual([], [x for x in self.leases()
                              if x.status != 'DELETED'])

    def test_slots_go_where_placement_would_put_their_servers(self):
        self.gold('host2')
        resp = self.post_lease('gold', 2)
        self.assertEqual(409, resp.status_code, resp.text)
        # Both nodes are free: the node without the trait for the one
        # that forbids it (the spread alone would choose host2), the
        # other for the one that requires it.
        resp = self.post_lease('not-gold', 1)
        self.assertEqual(201, resp.status_code, resp.text)
        plain = resp.json()['lease']
        self.assertEqual(['host1'], self.nodes(plain))
        resp = self.post_lease('gold', 1)
        self.assertEqual(201, resp.status_code, resp.text)
        gold = resp.json()['lease']
        self.assertEqual(['host2'], self.nodes(gold))
        self.wait_for_start(gold)
        self.wait_for_start(plain)
        uuid = self.boot_into(gold['reservations'][0]['id'],
                              flavor='gold').body['server']['id']
        self.assertEqual('host2', self.node_of(uuid))
        # Its slot's node was not chosen for the trait: refused by name,
        # not left to fail in the scheduler.
        rid = plain['reservations'][0]['id']
        resp = self.boot_into(rid, flavor='gold', name='vm2')
        self.assertEqual(400, resp.status, resp.content)
        self.assertEqual(
            'flavorRef: the flavor asks for traits CUSTOM_GOLD; the '
            'reserved slots were placed on nodes with traits !CUSTOM_GOLD',
            resp.body['badRequest']['message'])
        self.assertEqual({}, self.bound(rid))

    def test_a_boot_lease_takes_a_node_with_the_trait(self):
        self.gold('host1')
        resp = self.boot(base.params(base.when(60), base.when(120)),
                         flavor='gold')
        self.assertEqual(202, resp.status, resp.content)
        lease = self.lease_of_server(resp.body['server']['id'])
        self.assertEqual({'host1'}, {s.node for s in db_ledger.slots(
            STORE, resp.body['server']['reservation']['reservation_id'])})
        self.assertEqual('PENDING', lease.status)

    def test_a_maintenance_window_moves_a_slot_only_to_its_traits(self):
        self.gold('host2')
        resp = self.rsv('POST', '/leases', {
            'name': 'later', 'start_date': base.soon(3600),
            'end_date': base.soon(7200), 'reservations': [{
                'resource_type': 'flavor:instance', 'flavor_id': 'gold',
                'amount': 1, 'affinity': 'None'}]})
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.assertEqual(['host2'], self.nodes(lease))

        def window(node: str):
            return self.admin_rsv('POST', '/leases', {
                'name': 'window', 'start_date': base.soon(1800),
                'end_date': base.soon(5400), 'reservations': [{
                    'resource_type': 'maintenance', 'hosts': [node],
                    'reason': 'firmware'}]})
        # host1 has room but not the trait: the lease can not move there.
        resp = window('host2')
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual([lease['id']], [x['lease_id']
                                         for x in resp.json()['leases']])
        self.assertEqual(['host2'], self.nodes(lease))
        self.gold('host1')
        resp = window('host2')
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual(['host1'], self.nodes(lease))

    def test_a_grown_reservation_s_slots_have_its_traits(self):
        self.gold('host2')
        lease = self.post_lease('gold', 1).json()['lease']
        rid = lease['reservations'][0]['id']

        def grow(amount: int):
            return self.rsv('PUT', '/leases/%s' % lease['id'], {
                'reservations': [{'id': rid, 'amount': amount}]})
        # host1 has room for a second, not the trait.
        resp = grow(2)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('on nodes with traits CUSTOM_GOLD',
                      resp.json()['error_message'])
        self.assertEqual(['host2'], self.nodes(lease))

    def test_instance_reservations_choose_nodes_by_their_traits(self):
        # Blazar's resource_properties on instance reservations, matched
        # on the shared pool's nodes by their traits: a flavor without
        # traits, and one of a size, each kept to its kind of node.
        self.gold('host2')

        def post(wanted: str, **reservation):
            return self.rsv('POST', '/leases', {
                'name': 'by-trait', 'start_date': base.soon(1),
                'end_date': base.soon(3600), 'reservations': [dict(
                    amount=1, affinity='None', resource_properties=wanted,
                    **reservation)]})
        gold = '["==", "$traits", "CUSTOM_GOLD"]'
        plain = '["!=", "$traits", "CUSTOM_GOLD"]'
        flavor = dict(resource_type='flavor:instance',
                      flavor_id=base.ONE_PER_NODE)
        sized = dict(resource_type='virtual:instance', vcpus=2,
                     memory_mb=4096, disk_gb=1)
        resp = post(plain, **flavor)
        self.assertEqual(201, resp.status_code, resp.text)
        plain_id = resp.json()['lease']['id']
        self.assertEqual(['host1'], self.nodes(resp.json()['lease']))
        self.assertEqual(plain, resp.json()['lease']['reservations'][0][
            'resource_properties'])
        # The one plain node is taken; the gold one is not asked for.
        self.assertEqual(409, post(plain, **sized).status_code)
        resp_gold = post(gold, **sized)
        self.assertEqual(201, resp_gold.status_code, resp_gold.text)
        self.assertEqual(['host2'], self.nodes(resp_gold.json()['lease']))
        # A Blazar host's field or capability: no node of the shared
        # pool has one to match.
        for wanted in ('["==", "$traits"]', '[">=", "$vcpus", "2"]'):
            resp = post(wanted, **flavor)
            self.assertEqual(400, resp.status_code, resp.text)
            self.assertIn('reservations[0].resource_properties: ',
                          resp.json()['error_message'])
        self.assertIn('only $hypervisor_hostname and $traits',
                      resp.json()['error_message'])
        # Before the start, the nodes are chosen again: the gold lease
        # moves to the plain node once that is free.
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s' % plain_id)
                         .status_code)
        lease = resp_gold.json()['lease']
        resp = self.rsv('PUT', '/leases/%s' % lease['id'], {
            'reservations': [{'id': lease['reservations'][0]['id'],
                              'resource_properties': plain}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(['host1'], self.nodes(lease))

    def test_the_calendar_counts_the_nodes_with_the_trait(self):
        self.gold('host2')
        resp = self.rsv('GET', '/ledger')
        self.assertEqual(200, resp.status_code, resp.text)
        free = {f['flavor_id']: f['steps'][0]['count']
                for f in resp.json()['ledger']['free']}
        self.assertEqual((2, 1, 1), (free[base.ONE_PER_NODE], free['gold'],
                                     free['not-gold']))


class OrdinaryBootTest(base.SharingTestCase):
    """An ordinary boot of a GPU flavor is Nova's to place: the ledger
    counts what it takes of the classes a slot holds, and refuses nothing
    for its GPU.
    """

    def setUp(self) -> None:
        super().setUp()
        for name, ram in (('g1.a100', 512), ('g1.big', 4096)):
            self.admin_api.post_flavor({'flavor': {
                'name': name, 'id': name, 'vcpus': 1, 'ram': ram,
                'disk': 1}})
            self.admin_api.post_extra_spec(name, {'extra_specs': {
                'resources:CUSTOM_GPU_A100': '1'}})

    def test_an_ordinary_gpu_boot_is_no_match_of_an_open_slot(self):
        # The slot holds no GPU: the boot stays an ordinary one, left to
        # Nova (whose nodes here have no GPU either).
        lease, rid = self.running_shared(amount=1, shared_with=(),
                                         matching='open')
        resp = self.boot(None, flavor='g1.a100', name='gpu')
        self.assertEqual(202, resp.status, resp.content)
        self.assertNotIn('reservation', resp.body['server'])
        self._wait_for_state_change(resp.body['server'], 'ERROR')
        self.run_engine()
        self.assertEqual({}, self.bound(rid))

    def test_a_gpu_boot_forced_to_a_host_is_judged_by_its_cpu(self):
        # A forced host skips the scheduler's filters; the hook applies
        # the filter's rule to what the boot takes of the slot's classes:
        # beside a running lease's m1.medium (4 of the node's 7.5 GB),
        # 512 MB fit and 4 GB do not.
        self.running_shared(amount=3, shared_with=())
        for flavor, status in (('g1.big', 409), ('g1.a100', 202)):
            server = self._build_server(
                name='forced', image_uuid=base.IMAGE, flavor_id=flavor,
                networks='none')
            server['availability_zone'] = 'nova:host1'
            resp = self.admin_api.api_post('/servers', {'server': server},
                                           check_response_status=False)
            self.assertEqual(status, resp.status, (flavor, resp.content))
        self._wait_for_state_change(resp.body['server'], 'ERROR')
