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

from nova_reservation import exception
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
            # Beside them: what the kinds share (base, checks).
            if name.endswith('.py') and name not in ('__init__.py',
                                                     'base.py', 'checks.py'):
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

    def test_only_the_kinds_branch_on_a_kind_s_name(self):
        # The rest asks the kind (`kinds.of(name).window`, ...).  Beside
        # the kinds and their names: the store, whose queries name the
        # kind its rows hold, and the API's clients (CLI, dashboard), which
        # read its views.
        names = {v for k, v in vars(resource_types).items() if k.isupper()}
        kept = ('nova_reservation/lease/kinds', 'nova_reservation/db',
                'nova_reservation/cli', 'nova_reservation/dashboard',
                'nova_reservation/tests', 'nova_reservation/schemas')
        self.assertEqual({}, branches_on_names(kept, names))

    def test_the_check_finds_a_branch_on_a_name(self):
        tree = ast.parse('if res.resource_type == resource_types.HOST:\n'
                         '    pass\n'
                         'ok = kind in ("maintenance", "x")\n'
                         'fine = kinds.of(t).window\n'
                         'also = "maintenance" in body\n')
        self.assertEqual(2, len(compared_names(tree, {'maintenance'})))

    def test_a_lease_body_s_reservation_is_read_by_its_kind(self):
        flavor = types.SimpleNamespace(resources='1 vCPU', traits=('X',),
                                       extras=())
        found = kinds.of(resource_types.FLAVOR).request_fields(
            'r.', {'flavor_id': 3, 'amount': '2'}, lambda f: flavor,
            lambda n: ())
        self.assertEqual(('3', 2, '1 vCPU', ('X',)), (
            found['flavor_id'], found['count'], found['need'],
            found['traits']))
        found = kinds.of(resource_types.HOST).request_fields(
            'r.', {'min': 1, 'max': 2}, None, None)
        self.assertEqual((2, 1), (found['count'], found['min_count']))
        e = self.assertRaises(
            exception.InvalidParam, kinds.of(resource_types.HOST).
            request_fields, 'r.', {'min': 3, 'max': 2}, None, None)
        self.assertEqual('r.min', e.field)
        e = self.assertRaises(
            exception.InvalidParam,
            kinds.of(resource_types.FLOATINGIP).request_fields, 'r.',
            {'network_id': 'n', 'amount': 1,
             'required_floatingips': ['192.0.2.1']}, None,
            lambda n: ('192.0.2.2',))
        self.assertEqual('r.required_floatingips[0]', e.field)
        e = self.assertRaises(
            exception.InvalidParam,
            kinds.of(resource_types.SERVER).request_fields, 'r.', {}, None,
            None)
        self.assertEqual('r.resource_type', e.field)

    def test_a_change_is_read_by_the_reservation_s_kind(self):
        host = types.SimpleNamespace(max_count=2, min_count=1, amount=2,
                                     hypervisor_properties=None,
                                     resource_properties=None)
        self.assertEqual((2, 3, 2, {'amount': 3, 'max_count': 3,
                                    'min_count': 2}),
                         kinds.of(resource_types.HOST).grown(
                             'r.', host, {'max': 3, 'min': 2}))
        e = self.assertRaises(exception.InvalidParam,
                              kinds.of(resource_types.HOST).grown, 'r.',
                              host, {'max': 1})
        self.assertEqual('r.max', e.field)
        virtual = types.SimpleNamespace(amount=2, vcpus=1, memory_mb=512,
                                        disk_gb=0, affinity=None,
                                        resource_properties=None)
        self.assertEqual({'vcpus': 2, 'affinity': True},
                         kinds.of(resource_types.VIRTUAL).reshaped(
                             'r.', virtual, {'vcpus': 2, 'memory_mb': 512,
                                             'affinity': 'true'}))
        addresses = types.SimpleNamespace(
            network_id='n', required_floatingips='["192.0.2.1"]')
        kind = kinds.of(resource_types.FLOATINGIP)
        # As it is, or emptied: kept; another address: refused.
        kind.keeps('r.', addresses, {'required_floatingips': ['192.0.2.1'],
                                     'network_id': 'n'})
        kind.keeps('r.', addresses, {'required_floatingips': []})
        for entry in ({'required_floatingips': ['192.0.2.2']},
                      {'network_id': 'm'}):
            self.assertRaises(exception.InvalidParam, kind.keeps, 'r.',
                              addresses, entry)
        # The network first, as Blazar's fields are listed.
        e = self.assertRaises(exception.InvalidParam, kind.keeps, 'r.',
                              addresses, {'network_id': 'm',
                                          'required_floatingips': ['x']})
        self.assertEqual('r.network_id', e.field)

    def test_what_usage_enforcement_is_told_of_each_kind(self):
        req = types.SimpleNamespace(
            count=2, min_count=1, flavor_id='f', need=None, affinity=None,
            resource_properties='', hypervisor_properties='',
            before_end=None, network_id='n', addresses=('192.0.2.1',),
            hosts=('c1', 'c2'), reason='disks')
        told = {name: sorted(kind.requested(req))
                for name, kind in kinds.KINDS.items()}
        self.assertEqual(['affinity', 'amount', 'flavor_id',
                          'resource_properties'],
                         told[resource_types.MAINTENANCE])
        self.assertEqual(told[resource_types.MAINTENANCE],
                         told[resource_types.VIRTUAL])
        self.assertEqual(['amount', 'flavor_id'],
                         told[resource_types.SERVER])
        self.assertEqual(['before_end', 'hypervisor_properties', 'max',
                          'min', 'resource_properties'],
                         told[resource_types.HOST])
        self.assertEqual(['amount', 'network_id', 'required_floatingips'],
                         told[resource_types.FLOATINGIP])

    def test_what_only_some_kinds_are(self):
        by = {name: kinds.of(name) for name in kinds.KINDS}
        self.assertEqual({resource_types.SERVER},
                         {n for n, k in by.items() if k.made_by_boot})
        self.assertEqual({resource_types.MAINTENANCE},
                         {n for n, k in by.items() if k.window})
        self.assertEqual({resource_types.HOST},
                         {n for n, k in by.items() if k.whole_hosts})
        self.assertEqual({resource_types.FLAVOR},
                         {n for n, k in by.items() if k.copies_flavor})
        self.assertEqual({resource_types.SERVER, resource_types.FLOATINGIP,
                          resource_types.MAINTENANCE},
                         {n for n, k in by.items() if k.refuses_boots(
                             types.SimpleNamespace(id='r', lease_id='l'))})
        # A lease's start and end act in Nova as before the kinds held
        # them: hosts and flavors, then floating IPs, then a window.
        rows = [types.SimpleNamespace(id=i, resource_type=t) for i, t in (
            (1, resource_types.MAINTENANCE), (2, resource_types.FLOATINGIP),
            (3, resource_types.HOST), (4, resource_types.FLAVOR))]
        self.assertEqual([3, 4, 2, 1],
                         [r.id for r in kinds.in_phases(rows)])
        self.assertEqual(resource_types.HOST, kinds.named_by({'min'}))
        self.assertEqual(resource_types.FLAVOR,
                         kinds.named_by({'flavor_id', 'amount'}))


def compared_names(tree, names: set) -> list:
    """The comparisons in `tree` with a kind's name: a constant of
    `resource_types`, or a string of `names` compared with a type.
    """
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        text = ast.unparse(node)
        for operand in [node.left] + node.comparators:
            for part in ast.walk(operand):
                if isinstance(part, ast.Attribute) and isinstance(
                        part.value, ast.Name) and \
                        part.value.id == 'resource_types' or (
                        isinstance(part, ast.Constant) and
                        part.value in names and
                        ('type' in text or 'kind' in text)):
                    found.append(text)
    return found


def branches_on_names(kept: tuple, names: set) -> dict:
    """{module outside `kept`: its comparisons with a kind's name}."""
    found = {}
    for folder, _, files in os.walk(os.path.join(ROOT, 'nova_reservation')):
        for name in files:
            path = os.path.relpath(os.path.join(folder, name), ROOT)
            if not name.endswith('.py') or path.startswith(kept):
                continue
            with open(os.path.join(ROOT, path)) as f:
                hits = compared_names(ast.parse(f.read()), names)
            if hits:
                found[path] = hits
    return found
