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
"""The reservation kinds: one class each, registered once, and the
groupings the rest of the code asks them for.
"""

import ast
import os
import types

import testtools

from nova_reservation.lease import kinds
from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


class KindsTest(testtools.TestCase):

    def test_every_kind_of_blazar_s_names_has_its_class(self):
        names = {v for k, v in vars(resource_types).items() if k.isupper()}
        self.assertEqual(names, set(kinds.KINDS))
        for name, kind in kinds.KINDS.items():
            self.assertIsInstance(kind, base.Kind)
            self.assertEqual(name, kind.name)
            self.assertIs(kind, kinds.of(name))

    def test_each_kind_is_a_module_of_its_own(self):
        folder = os.path.join(ROOT, 'nova_reservation', 'lease', 'kinds')
        classes = {}
        for name in os.listdir(folder):
            # Beside them: what the kinds share (base, fields).
            if name.endswith('.py') and name not in ('__init__.py',
                                                     'base.py', 'fields.py'):
                with open(os.path.join(folder, name)) as f:
                    tree = ast.parse(f.read())
                classes[name] = [n.name for n in tree.body
                                 if isinstance(n, ast.ClassDef)]
        self.assertEqual(len(kinds.KINDS), len(classes))
        self.assertEqual([1] * len(classes),
                         [len(c) for c in classes.values()])

    def test_what_a_change_may_give_each_kind(self):
        # As Blazar: sizes any time, shapes before the start; shared kinds
        # change their sharing; a floating IP reservation keeps its
        # network and addresses; a maintenance window changes nothing.
        self.assertEqual({'max', 'min', 'hypervisor_properties',
                          'resource_properties', 'shared_with', 'matching'},
                         kinds.of(resource_types.HOST).changeable())
        self.assertEqual({'amount'},
                         kinds.of(resource_types.SERVER).changeable())
        self.assertEqual(frozenset(),
                         kinds.of(resource_types.MAINTENANCE).changeable())
        self.assertEqual(('network_id', 'required_floatingips'),
                         kinds.of(resource_types.FLOATINGIP).kept)
        self.assertIn('affinity',
                      kinds.of(resource_types.VIRTUAL).changeable())

    def test_the_groupings(self):
        self.assertEqual(
            {resource_types.SERVER, resource_types.FLAVOR,
             resource_types.VIRTUAL}, set(kinds.SHARED_POOL))
        self.assertEqual({resource_types.FLAVOR, resource_types.VIRTUAL},
                         set(kinds.WITH_FLAVOR))
        self.assertEqual({resource_types.FLAVOR, resource_types.VIRTUAL,
                          resource_types.HOST}, set(kinds.SHAREABLE))
        # Quotas count hosts of host reservations only.
        self.assertEqual({resource_types.SERVER: 0, resource_types.FLAVOR: 0,
                          resource_types.VIRTUAL: 0, resource_types.HOST: 1},
                         kinds.COUNTED)

    def test_each_kind_shows_blazar_s_fields(self):
        row = types.SimpleNamespace(
            id='r1', amount=2, flavor_id='f1', affinity=None, vcpus=1,
            memory_mb=512, disk_gb=1, resource_properties=None,
            server_group_id='g1', min_count=1, max_count=3,
            hypervisor_properties=None, before_end=None, aggregate_id=7,
            network_id='n1', required_floatingips='["192.0.2.9"]',
            hosts='["compute1"]', reason='disks', unmoved_servers=None)
        shown = {name: kind.fields(row, ['s1'])
                 for name, kind in kinds.KINDS.items()}
        self.assertEqual({'amount': 2, 'flavor_id': 'f1', 'resource_id': 'f1',
                          'servers': ['s1']},
                         shown[resource_types.SERVER])
        self.assertEqual(shown[resource_types.FLAVOR],
                         shown[resource_types.VIRTUAL])
        self.assertEqual((None, 'g1', '', 'f1'), tuple(
            shown[resource_types.FLAVOR][k] for k in (
                'aggregate_id', 'server_group_id', 'resource_properties',
                'resource_id')))
        self.assertEqual({'min': 1, 'max': 3, 'hypervisor_properties': '',
                          'resource_properties': '', 'before_end': 'default',
                          'resource_id': 7}, shown[resource_types.HOST])
        self.assertEqual(['192.0.2.9'], shown[resource_types.FLOATINGIP][
            'required_floatingips'])
        self.assertEqual({'hosts': ['compute1'], 'reason': 'disks',
                          'unmoved_servers': []},
                         shown[resource_types.MAINTENANCE])
