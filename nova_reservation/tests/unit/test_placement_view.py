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

"""The host view reads Placement once per lease, and a provider again only
when its generation moved.
"""

import copy

import testtools

from nova_reservation import capacity
from nova_reservation.clients import placement
from nova_reservation import exception


class _Answer:
    status_code = 200
    url = ''

    def __init__(self, body):
        self._body = body

    def json(self):
        return self._body


class RecordingPlacement:
    """Placement's answers for two compute nodes and a non-compute
    provider, with a record of the requests.
    """

    def __init__(self):
        self.urls = []
        self.generations = {'rp1': 1, 'rp2': 1, 'shared': 1}
        self.consumers = {'rp1': {'vm1': {'resources': {
            'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}}},
            'rp2': {}, 'shared': {}}
        self.traits = {'rp1': ['COMPUTE_NODE', 'CUSTOM_GOLD'],
                       'rp2': ['COMPUTE_NODE'], 'shared': []}

    def get(self, url, version=None):
        self.urls.append(url)
        if url == '/resource_providers':
            return _Answer({'resource_providers': [
                dict(uuid=u, name='node-' + u, generation=g)
                for u, g in self.generations.items()]})
        uuid = url.split('/')[2]
        if url.count('/') == 2:
            return _Answer(dict(uuid=uuid, name='node-' + uuid,
                                generation=self.generations[uuid]))
        if url.endswith('/allocations'):
            return _Answer({'allocations': self.consumers[uuid]})
        if url.endswith('/traits'):
            return _Answer({'traits': self.traits[uuid]})
        inventories = {} if uuid == 'shared' else {
            'VCPU': dict(total=8, reserved=0, allocation_ratio=2.0,
                         max_unit=8, min_unit=1, step_size=1),
            'MEMORY_MB': dict(total=4096, reserved=512,
                              allocation_ratio=1.0),
            'DISK_GB': dict(total=100, reserved=0, allocation_ratio=1.0)}
        return _Answer({'inventories': inventories})


class HostViewTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.leased = set()
        self.placement = RecordingPlacement()
        self.view = placement.HostView(lambda uuids: self.leased & set(uuids))

    def hosts(self, fresh=False):
        self.placement.urls = []
        return {h.node: h for h in self.view.hosts(self.placement, fresh)}

    def test_capacity_and_base_usage(self):
        hosts = self.hosts()
        self.assertEqual({'node-rp1', 'node-rp2'}, set(hosts))
        self.assertEqual(capacity.Resources(16, 3584, 100),
                         hosts['node-rp1'].capacity)
        self.assertEqual(capacity.Resources(2, 1024, 10),
                         hosts['node-rp1'].base)
        self.assertEqual(capacity.ZERO, hosts['node-rp2'].base)
        # One server gets at most the node's 8 vCPUs, not the 16 of its
        # allocation ratio; Placement's defaults for what is not set.
        self.assertEqual((capacity.Resources(1, 1, 1),
                          capacity.Resources(8, 2 ** 31 - 1, 2 ** 31 - 1),
                          capacity.Resources(1, 1, 1)),
                         hosts['node-rp1'].units)

    def test_only_moved_providers_are_read_again(self):
        self.hosts()
        self.assertEqual(9, len(self.placement.urls))   # list + 3 + 3 + 2
        self.hosts()
        self.assertEqual(['/resource_providers'], self.placement.urls)
        self.placement.generations['rp2'] = 2
        self.placement.consumers['rp2'] = {'vm2': {'resources': {
            'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}}
        hosts = self.hosts()
        self.assertEqual(['/resource_providers',
                          '/resource_providers/rp2/inventories',
                          '/resource_providers/rp2/traits',
                          '/resource_providers/rp2/allocations'],
                         self.placement.urls)
        self.assertEqual(capacity.Resources(1, 512, 1),
                         hosts['node-rp2'].base)

    def test_fresh_reads_the_consumers_of_providers_that_did_not_move(self):
        self.hosts()
        # A server deleted: its allocations go, the generation stays.
        self.placement.consumers['rp1'] = {}
        self.assertEqual(capacity.Resources(2, 1024, 10),
                         self.hosts()['node-rp1'].base)
        hosts = self.hosts(fresh=True)
        self.assertEqual(capacity.ZERO, hosts['node-rp1'].base)
        # Only the consumers of the nodes, not their inventories and
        # traits, which move the generation; nor anything of a provider
        # that is no node's.
        self.assertEqual(['/resource_providers',
                          '/resource_providers/rp1/allocations',
                          '/resource_providers/rp2/allocations'],
                         self.placement.urls)
        self.assertEqual({'COMPUTE_NODE', 'CUSTOM_GOLD'},
                         hosts['node-rp1'].traits)
        self.assertEqual(capacity.Resources(16, 3584, 100),
                         hosts['node-rp1'].capacity)
        # The view keeps what it read.
        self.assertEqual(capacity.ZERO, self.hosts()['node-rp1'].base)
        self.assertEqual(['/resource_providers'], self.placement.urls)

    def test_fresh_reads_the_whole_of_a_provider_that_moved(self):
        self.hosts()
        self.placement.generations['rp2'] = 2
        self.placement.traits['rp2'] = ['COMPUTE_NODE', 'CUSTOM_FAST']
        hosts = self.hosts(fresh=True)
        self.assertEqual(['/resource_providers',
                          '/resource_providers/rp1/allocations',
                          '/resource_providers/rp2/inventories',
                          '/resource_providers/rp2/traits',
                          '/resource_providers/rp2/allocations'],
                         self.placement.urls)
        self.assertEqual({'COMPUTE_NODE', 'CUSTOM_FAST'},
                         hosts['node-rp2'].traits)

    def test_lease_servers_are_left_to_the_ledger(self):
        self.leased = {'vm1'}
        self.assertEqual(capacity.ZERO, self.hosts()['node-rp1'].base)
        # A node keeps its traits with the base it is given.
        self.assertEqual({'COMPUTE_NODE', 'CUSTOM_GOLD'},
                         self.hosts()['node-rp1'].traits)

    def test_traits_are_read_with_the_rest_of_a_moved_provider(self):
        hosts = self.hosts()
        self.assertEqual({'COMPUTE_NODE', 'CUSTOM_GOLD'},
                         hosts['node-rp1'].traits)
        self.assertEqual({'COMPUTE_NODE'}, hosts['node-rp2'].traits)
        # Setting a provider's traits moves its generation.
        self.placement.traits['rp2'] = ['COMPUTE_NODE', 'CUSTOM_GOLD']
        self.assertEqual({'COMPUTE_NODE'}, self.hosts()['node-rp2'].traits)
        self.placement.generations['rp2'] = 2
        self.assertEqual({'COMPUTE_NODE', 'CUSTOM_GOLD'},
                         self.hosts()['node-rp2'].traits)

    def test_a_node_is_a_provider_nova_marks_as_one(self):
        # An Ironic node has its class alone, no VCPU: still a node.  A
        # root that Nova did not make (Neutron's, say) is none, whatever
        # it has.
        self.placement.traits.update(rp2=[], shared=['COMPUTE_NODE'])
        hosts = self.hosts()
        self.assertEqual({'node-rp1', 'node-shared'}, set(hosts))
        self.assertEqual(capacity.ZERO, hosts['node-shared'].capacity)

    def test_a_gone_provider_is_forgotten(self):
        self.hosts()
        del self.placement.generations['rp1']
        self.assertEqual({'node-rp2'}, set(self.hosts()))

    def test_a_lease_s_nodes_read_again_alone(self):
        self.hosts()
        self.placement.urls = []
        # A boot claimed on rp2 since the listing: only its provider is
        # read again, and only because its generation moved.
        self.placement.generations['rp2'] = 2
        self.placement.consumers['rp2'] = {'vm2': {'resources': {
            'VCPU': 8, 'MEMORY_MB': 2048, 'DISK_GB': 50}}}
        hosts = self.view.hosts_of(self.placement, ['node-rp1', 'node-rp2',
                                                    'node-unknown'])
        self.assertEqual(['/resource_providers/rp1',
                          '/resource_providers/rp2',
                          '/resource_providers/rp2/inventories',
                          '/resource_providers/rp2/traits',
                          '/resource_providers/rp2/allocations'],
                         self.placement.urls)
        self.assertEqual({'node-rp1', 'node-rp2'}, set(hosts))
        self.assertEqual(capacity.Resources(8, 2048, 50),
                         hosts['node-rp2'].base)
        # The cached view has the claim too.
        self.placement.urls = []
        self.assertEqual(capacity.Resources(8, 2048, 50),
                         self.hosts()['node-rp2'].base)
        self.assertEqual(['/resource_providers'], self.placement.urls)

    def test_a_server_error_says_to_try_again(self):
        # Placement's database failing over: a 5xx, which the APIs answer
        # with a 503 that says to try again; any other answer is a bug.
        answers = {}

        def get(url, version=None):
            answer = _Answer({})
            answer.status_code = answers['status']
            return answer
        self.placement.get = get
        answers['status'] = 500
        error = self.assertRaises(exception.PlacementUnavailable, self.hosts)
        self.assertIn('try again', str(error))
        answers['status'] = 503
        self.assertRaises(exception.PlacementUnavailable, self.hosts)
        answers['status'] = 404
        self.assertRaises(RuntimeError, self.hosts)
        self.assertFalse(issubclass(exception.PlacementUnavailable,
                                    RuntimeError))


class GPUTreePlacement(RecordingPlacement):
    """rp1 with A100s on its root and a child provider of vGPUs (a
    physical GPU), as Nova's libvirt driver and a provider config file
    report them; rp2 plain.
    """

    def __init__(self):
        super().__init__()
        self.generations['gpu0'] = 1
        self.roots = {'gpu0': 'rp1'}
        self.consumers['rp1']['vm3'] = {'resources': {
            'VCPU': 1, 'MEMORY_MB': 512, 'CUSTOM_GPU_A100': 1}}
        self.consumers['gpu0'] = {'vm1': {'resources': {'VGPU': 1}},
                                  'vm3': {'resources': {'VGPU': 2}}}
        self.traits['gpu0'] = ['CUSTOM_NVIDIA_A2']

    def get(self, url, version=None):
        if url == '/resource_providers':
            self.urls.append(url)
            return _Answer({'resource_providers': [
                dict(uuid=u, name=('node-' + u if u not in self.roots
                                   else 'rp1_' + u),
                     generation=g,
                     root_provider_uuid=self.roots.get(u, u),
                     parent_provider_uuid=self.roots.get(u))
                for u, g in self.generations.items()]})
        if url.endswith('/inventories') and '/gpu' in url:
            self.urls.append(url)
            return _Answer({'inventories': {'VGPU': dict(
                total=4, reserved=0, allocation_ratio=1.0, max_unit=4)}})
        answer = super().get(url, version)
        if url.count('/') == 2:
            uuid = url.split('/')[2]
            answer._body['root_provider_uuid'] = self.roots.get(uuid, uuid)
        if url == '/resource_providers/rp1/inventories':
            answer._body['inventories']['CUSTOM_GPU_A100'] = dict(
                total=2, reserved=0, allocation_ratio=1.0)
        return answer


class ProviderTreeTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.leased = set()
        self.placement = GPUTreePlacement()
        self.view = placement.HostView(lambda uuids: self.leased & set(uuids))

    def hosts(self, fresh=False):
        self.placement.urls = []
        return {h.node: h for h in self.view.hosts(self.placement, fresh)}

    def test_a_node_carries_its_tree_beyond_the_root_s_counted_classes(self):
        hosts = self.hosts()
        # The child is part of rp1, not a node of its own.
        self.assertEqual({'node-rp1', 'node-rp2'}, set(hosts))
        rp1 = hosts['node-rp1']
        # A class is the whole tree's, wherever its providers are.
        self.assertEqual(capacity.extras({('', 'CUSTOM_GPU_A100'): 2,
                                          ('', 'VGPU'): 4}),
                         rp1.extra_capacity)
        self.assertEqual(capacity.extras({('', 'CUSTOM_GPU_A100'): 1,
                                          ('', 'VGPU'): 3}),
                         rp1.extra_base)
        self.assertEqual((('gpu0', frozenset({'CUSTOM_NVIDIA_A2'})),),
                         rp1.child_traits)
        # Placement's bounds of one allocation, its defaults where unset.
        self.assertEqual(((('', 'CUSTOM_GPU_A100'), (1, 2 ** 31 - 1, 1)),
                          (('', 'VGPU'), (1, 4, 1))), rp1.extra_units)
        self.assertEqual(capacity.Resources(3, 1536, 10), rp1.base)
        # A node of the counted classes only carries nothing more.
        rp2 = hosts['node-rp2']
        self.assertEqual((capacity.NO_EXTRAS, capacity.NO_EXTRAS, ()),
                         (rp2.extra_capacity, rp2.extra_base,
                          rp2.child_traits))

    def test_lease_servers_are_left_out_of_every_provider_s_base(self):
        self.leased = {'vm3'}
        rp1 = self.hosts()['node-rp1']
        self.assertEqual(capacity.extras({('', 'VGPU'): 1}),
                         rp1.extra_base)
        self.assertEqual(capacity.Resources(2, 1024, 10), rp1.base)

    def test_a_claim_on_a_child_alone_is_read_for_a_lease_s_nodes(self):
        self.hosts()
        self.placement.urls = []
        # A vGPU claimed since: only the child's generation moved.
        self.placement.generations['gpu0'] = 2
        # (A new answer, as Placement's are: not the one read before.)
        self.placement.consumers['gpu0'] = dict(
            self.placement.consumers['gpu0'], vm4={'resources': {'VGPU': 1}})
        hosts = self.view.hosts_of(self.placement, ['node-rp1'])
        self.assertEqual(['/resource_providers/rp1',
                          '/resource_providers/gpu0',
                          '/resource_providers/gpu0/inventories',
                          '/resource_providers/gpu0/traits',
                          '/resource_providers/gpu0/allocations'],
                         self.placement.urls)
        self.assertEqual(capacity.extras({('', 'CUSTOM_GPU_A100'): 1,
                                          ('', 'VGPU'): 4}),
                         hosts['node-rp1'].extra_base)

    def test_a_class_of_several_providers_is_summed_a_unit_a_server(self):
        # A second physical GPU, one vGPU of it used.
        self.placement.generations['gpu1'] = 1
        self.placement.roots['gpu1'] = 'rp1'
        self.placement.consumers['gpu1'] = {'vm5': {'resources': {
            'VGPU': 1}}}
        self.placement.traits['gpu1'] = ['CUSTOM_NVIDIA_A2']
        rp1 = self.hosts()['node-rp1']
        self.assertEqual(8, dict(rp1.extra_capacity)[('', 'VGPU')])
        self.assertEqual(4, dict(rp1.extra_base)[('', 'VGPU')])
        # One vGPU is on any GPU that has room; two might not be on one.
        self.assertEqual((1, 1, 1), dict(rp1.extra_units)[('', 'VGPU')])
        one, two = (capacity.Need(capacity.Resources(1, 512, 1),
                                  extras=capacity.extras({('', 'VGPU'): n}))
                    for n in (1, 2))
        self.assertTrue(capacity.may_hold(rp1, one))
        self.assertFalse(capacity.may_hold(rp1, two))
        # A GPU of a trait the server forbids gives it nothing: the node
        # is left alone.
        self.assertFalse(capacity.may_hold(rp1, one._replace(
            traits=('!CUSTOM_NVIDIA_A2',))))
        self.assertTrue(capacity.may_hold(rp1, one._replace(
            traits=('!CUSTOM_OTHER',))))

    def test_nodes_kept_between_leases_follow_every_change(self):
        # Between leases the nodes are kept while no provider moves; each
        # way a node changes is seen at the next lease.
        first = self.hosts()
        self.assertEqual(first, self.hosts())
        self.assertEqual(['/resource_providers'], self.placement.urls)
        # A server becomes a lease's: left out, then counted again.
        self.leased = {'vm3'}
        self.assertEqual(capacity.extras({('', 'VGPU'): 1}),
                         self.hosts()['node-rp1'].extra_base)
        self.leased = set()
        self.assertEqual(first, self.hosts())
        # A claim read for a lease's nodes alone.
        self.placement.generations['gpu0'] = 2
        self.placement.consumers['gpu0'] = {}
        self.view.hosts_of(self.placement, ['node-rp1'])
        self.assertEqual(capacity.extras({('', 'CUSTOM_GPU_A100'): 1}),
                         self.hosts()['node-rp1'].extra_base)
        # A new child (a second physical GPU), then a node gone.
        self.placement.generations['gpu1'] = 1
        self.placement.roots['gpu1'] = 'rp1'
        self.placement.consumers['gpu1'] = {}
        self.placement.traits['gpu1'] = []
        self.assertEqual(capacity.extras({('', 'CUSTOM_GPU_A100'): 2,
                                          ('', 'VGPU'): 8}),
                         self.hosts()['node-rp1'].extra_capacity)
        del self.placement.generations['rp2']
        self.assertEqual({'node-rp1'}, set(self.hosts()))


class CountedInventoriesTest(testtools.TestCase):
    """A unit wholly reserved while a server holds it (Ironic's node in
    use) is that server's; any other reserve is lost to everyone.
    """

    def test_a_reserve_while_in_use_is_the_consumers(self):
        gold = dict(total=1, reserved=1, allocation_ratio=1.0)
        ram = dict(total=4096, reserved=512, allocation_ratio=1.0)
        inventories = {'CUSTOM_GOLD': gold, 'MEMORY_MB': ram}
        given = copy.deepcopy(inventories)
        running = {'vm1': {'resources': {'CUSTOM_GOLD': 1,
                                         'MEMORY_MB': 1024}}}
        found = placement.counted_inventories(inventories, running)
        self.assertEqual(0, found['CUSTOM_GOLD']['reserved'])
        # A host's own reserve of RAM stays, whatever servers use.
        self.assertEqual(ram, found['MEMORY_MB'])
        # Reserved with nothing on it (Ironic's node in maintenance).
        self.assertEqual(inventories,
                         placement.counted_inventories(inventories, {}))
        self.assertEqual(given, inventories)   # unchanged
