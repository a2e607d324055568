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

"""The Nova internals that reserved servers (``hooks.reserved``) and the
reading of a flavor (``flavors``) rely on, pinned: each test fails when a
Nova upgrade changes one, before a cloud finds out.  The user guide lists
them (doc/source/user/reserved.rst).
"""

import inspect

from nova.api.openstack.compute.schemas import server_metadata
from nova.api.openstack.compute.schemas import server_tags
from nova.compute import api as compute_api
from nova.compute import manager as compute_manager
from nova.conductor import api as conductor_api
from nova.conductor import manager as conductor_manager
from nova.db.api import api as api_db_api
from nova.network import neutron
from nova import objects
from nova.policies import server_metadata as metadata_policies
from nova.policies import server_tags as tag_policies
from nova.scheduler import utils as scheduler_utils
from nova.virt import block_device as virt_block_device
import testtools

from nova_reservation.clients import flavors


objects.register_all()


def _params(fn) -> list:
    return list(inspect.signature(fn).parameters)


class NovaInternalsTest(testtools.TestCase):

    def test_the_api_hands_a_boot_to_the_conductor_in_one_call(self):
        # hooks.reserved stands in front of this call for a reserved boot.
        self.assertEqual(
            ['self', 'context', 'build_requests', 'request_spec', 'image',
             'admin_password', 'injected_files', 'requested_networks',
             'block_device_mapping', 'tags'],
            _params(conductor_api.ComputeTaskAPI.
                    schedule_and_build_instances))
        source = inspect.getsource(compute_api.API._create_instance)
        self.assertIn('self.compute_task_api.schedule_and_build_instances(',
                      source)
        self.assertIn('build_request.get_new_instance(context)', source)

    def test_unshelve_of_an_offloaded_server_without_a_snapshot(self):
        # No shelved_image_id: the conductor looks up no image, and the
        # compute spawns from the image properties the server keeps.
        conductor = inspect.getsource(
            conductor_manager.ComputeTaskManager.unshelve_instance)
        self.assertIn("image_id = sys_meta.get('shelved_image_id')",
                      conductor)
        self.assertIn('if image_id:', conductor)
        self.assertIn('_restrict_request_spec_to_cell', conductor)
        compute = inspect.getsource(
            compute_manager.ComputeManager._unshelve_instance)
        self.assertIn('get_image_from_system_metadata', compute)
        self.assertIn('setup_instance_network_on_host', compute)
        self.assertIn('_update_instance_after_spawn', compute)

    def test_a_new_volume_given_by_id_is_attached_not_made(self):
        # engine.volumes makes a reserved server's new volumes as its owner
        # and records them: the unshelve's block devices then attach them.
        for kind in (virt_block_device.DriverVolImageBlockDevice,
                     virt_block_device.DriverVolBlankBlockDevice,
                     virt_block_device.DriverVolSnapshotBlockDevice):
            self.assertIn('if not self.volume_id:',
                          inspect.getsource(kind.attach), kind)
        self.assertIn('_prep_block_device(', inspect.getsource(
            compute_manager.ComputeManager._unshelve_instance))

    def test_nova_acts_only_on_launched_servers(self):
        # Why a reserved server has launched_at set.
        source = inspect.getsource(compute_api.check_instance_state)
        self.assertIn('must_have_launched and not instance.launched_at',
                      source)

    def test_ports_are_made_without_a_host(self):
        self.assertEqual(
            ['self', 'context', 'instance', 'requested_networks',
             'security_groups', 'bind_host_id', 'resource_provider_mapping',
             'network_arqs'],
            _params(neutron.API.allocate_for_instance))
        self.assertIsInstance(objects.NetworkRequestList.no_allocate,
                              property)

    def test_a_server_is_mapped_and_its_build_request_gone_at_once(self):
        # Both in the API database, written with the context's transaction
        # (not an independent one of their own).
        for write in (objects.InstanceMapping._save_in_db,
                      objects.BuildRequest._destroy_in_db):
            self.assertIn('@api_db_api.context_manager.writer\n',
                          inspect.getsource(write))
        self.assertFalse(api_db_api.context_manager.writer._independent)
        # What a cut-off boot leaves: Nova's delete of the build request
        # looks for the server outside the cells, and destroys what it
        # finds without its ports.
        source = inspect.getsource(compute_api.API._delete_while_booting)
        self.assertIn('self._lookup_instance(context, instance_uuid)',
                      source)
        self.assertNotIn('deallocate_for_instance', source)

    def test_objects_and_rules_used_for_metadata_and_tags(self):
        for name in ('get_new_instance', 'destroy'):
            self.assertTrue(callable(getattr(objects.BuildRequest, name)))
        self.assertTrue(callable(objects.RequestSpec.get_scheduler_hint))
        self.assertTrue(callable(objects.ComputeNode.get_by_nodename))
        self.assertEqual(50, objects.instance.MAX_TAG_COUNT)
        self.assertEqual('os_compute_api:server-metadata:%s',
                         metadata_policies.POLICY_ROOT)
        self.assertEqual('os_compute_api:os-server-tags:%s',
                         tag_policies.POLICY_ROOT)
        for schema in (server_metadata.create, server_metadata.update,
                       server_metadata.update_all, server_tags.update_all):
            self.assertEqual('object', schema['type'])

    def test_what_the_scheduler_asks_placement_for(self):
        # flavors.asked reads the query Nova sends to
        # GET /allocation_candidates, made from a RequestSpec of the
        # flavor alone.
        self.assertEqual(['request_spec', 'enable_pinning_translate'],
                         _params(scheduler_utils.ResourceRequest.
                                 from_request_spec))
        flavor = objects.Flavor(
            vcpus=1, memory_mb=512, root_gb=1, ephemeral_gb=0, swap=0,
            flavorid='f', name='f', extra_specs={
                'trait:CUSTOM_X': 'required', 'trait:CUSTOM_Y': 'forbidden',
                'resources1:VGPU': '1', 'group_policy': 'isolate',
                'pci_passthrough:alias': 'a100:1'})
        request = flavors.resource_request(flavor)
        # A PCI alias is not in it unless [filter_scheduler]
        # pci_in_placement is on: flavors names it apart.
        self.assertEqual(
            'group_policy=isolate&limit=1000&'
            'required=CUSTOM_X%2C%21CUSTOM_Y&'
            'resources=DISK_GB%3A1%2CMEMORY_MB%3A512%2CVCPU%3A1&'
            'resources1=VGPU%3A1', request.to_querystring())
