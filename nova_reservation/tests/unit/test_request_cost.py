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

"""What checking a field costs: every pattern of every schema is linear,
and none is applied to a value longer than its schema allows."""

import re
import time

import testtools

from devcloud import worst_input
from nova_reservation import exception
from nova_reservation.schemas import common
from nova_reservation import validation


SIZES = (8192, worst_input.BODY_LIMIT)


def every_string() -> list:
    """(where, path, schema) of each string field of every body, query
    and of lease_params.
    """
    found = [('%s %s' % (method, route), path, leaf)
             for method, route, schema in worst_input.bodies()
             for path, leaf, _ in worst_input.body_strings(schema)]
    found += [('GET %s?' % route, (name,), leaf)
              for route, fields in worst_input.queries()
              for name, leaf in fields.items()]
    found += [('lease_params', path, leaf) for path, leaf, _ in
              worst_input.body_strings(worst_input.LEASE_PARAMS)]
    return found


def cpu(call) -> float:
    started = time.thread_time()
    try:
        call()
    except exception.InvalidParam:
        pass
    return time.thread_time() - started


class SchemaSizeTest(testtools.TestCase):
    """Every value a walk or a pattern looks at has a size limit."""

    def test_every_string_is_bounded(self):
        fields = every_string()
        self.assertGreater(len(fields), 40)
        for where, path, leaf in fields:
            # (An enum is compared, not walked.)
            if 'enum' not in leaf:
                self.assertIn('maxLength', leaf, '%s %s' % (
                    where, worst_input.field_name(path)))

    def test_every_list_is_bounded(self):
        for method, route, schema in worst_input.bodies():
            for path, leaf in worst_input.list_fields(schema):
                self.assertLessEqual(leaf['maxItems'], 100, (route, path))


class PatternCostTest(testtools.TestCase):
    """The worst input of each pattern, at the size of the largest body,
    costs less than the budget: each pattern alone (linear), and the
    field's check (which refuses the size first).
    """

    def test_each_pattern_alone_is_linear(self):
        checked = set()
        for where, path, leaf in every_string():
            pattern = leaf.get('pattern')
            if pattern is None or pattern in checked:
                continue
            checked.add(pattern)
            compiled = re.compile(pattern)
            # A smaller size first: a pattern that backtracks fails there
            # in a moment, not after minutes.
            for size in SIZES:
                text = worst_input.worst(leaf, size)
                spent = cpu(lambda: compiled.search(text))
                self.assertLess(spent, worst_input.BUDGET, '%s %s: %s' % (
                    where, worst_input.field_name(path), pattern))
        self.assertIn(common.NAME['pattern'], checked)

    def test_each_field_check(self):
        for where, path, leaf in every_string():
            for size in SIZES:
                text = worst_input.worst(leaf, size)
                spent = cpu(lambda: validation.check(leaf, text, 'f'))
                self.assertLess(spent, worst_input.BUDGET, '%s %s' % (
                    where, worst_input.field_name(path)))

    def test_a_name_that_once_took_a_minute(self):
        # 64,000 characters took 27 s with the pattern of before.
        compiled = re.compile(common.NAME['pattern'])
        for size in SIZES:
            text = 'a' * size + '\x00'
            self.assertLess(cpu(lambda: compiled.search(text)),
                            worst_input.BUDGET)
        e = self.assertRaises(exception.InvalidParam, validation.check,
                              common.NAME, text, 'name')
        self.assertEqual('name: is longer than 255 characters', str(e))


class SizeFirstTest(testtools.TestCase):
    """A pattern, a list's items and an object's properties are looked at
    only within the size their schema allows.
    """

    # A pattern that backtracks exponentially: 24 characters take
    # seconds.
    SLOW = {'type': 'string', 'maxLength': 10, 'pattern': '^(a+)+$'}

    def test_a_pattern_is_not_applied_beyond_max_length(self):
        text = 'a' * 24 + '!'
        self.assertLess(cpu(lambda: validation.check(self.SLOW, text, 'f')),
                        worst_input.BUDGET)
        e = self.assertRaises(exception.InvalidParam, validation.check,
                              self.SLOW, text, 'f')
        self.assertEqual('f: is longer than 10 characters', str(e))

    def test_a_pattern_within_max_length_is_applied(self):
        self.assertRaises(exception.InvalidParam, validation.check,
                          self.SLOW, 'aaa!', 'f')
        self.assertEqual('aaa', validation.check(self.SLOW, 'aaa', 'f'))

    def test_items_are_not_walked_beyond_max_items(self):
        schema = {'type': 'array', 'maxItems': 2, 'uniqueItems': True,
                  'items': self.SLOW}
        value = ['a' * 9 + '!'] * 3
        e = self.assertRaises(exception.InvalidParam, validation.check,
                              schema, value, 'f')
        self.assertEqual('f: holds at most 2 items', str(e))
        e = self.assertRaises(exception.InvalidParam, validation.check,
                              schema, value[:1] + ['a'], 'f')
        self.assertTrue(str(e).startswith('f[0]: '), e)

    def test_properties_are_not_walked_beyond_max_properties(self):
        schema = {'type': 'object', 'maxProperties': 1,
                  'propertyNames': self.SLOW,
                  'additionalProperties': self.SLOW}
        value = {'a' * 9 + '!': 'x', 'b': 'y'}
        e = self.assertRaises(exception.InvalidParam, validation.check,
                              schema, value, 'f')
        self.assertEqual('f: holds at most 1 fields', str(e))

    def test_items_compared_only_when_each_may_be_one(self):
        # jsonschema compares items that are not strings or numbers pair
        # by pair, deeply: a hundred of them took a second and a half.
        from nova_reservation.schemas import leases
        deep = [[[]] * 370 + [i] for i in range(100)]
        for schema in (leases.SHARED_WITH,
                       leases.RESERVATION_FIELDS['maintenance']['hosts']):
            self.assertLess(cpu(lambda: validation.check(
                schema, deep, 'f')), worst_input.BUDGET)
            e = self.assertRaises(exception.InvalidParam, validation.check,
                                  schema, deep, 'f')
            self.assertTrue(str(e).startswith('f['), e)
            self.assertIn('must be a string', str(e))
        e = self.assertRaises(exception.InvalidParam, validation.check,
                              leases.SHARED_WITH, ['a', 'a'], 'f')
        # (Given twice: still refused.)
        self.assertIn('f: must be the other projects', str(e))

    def test_a_final_newline_is_refused(self):
        # Python's $ also matches before a last newline; JSON Schema's
        # does not.
        for schema in (common.NAME, common.UUID, common.DATE):
            self.assertRaises(exception.InvalidParam, validation.check,
                              schema, {
                                  id(common.NAME): 'name',
                                  id(common.UUID): '6e2c5a3e-1f0b-4c8e-9a7d-'
                                                   '0c1e2f3a4b5c',
                                  id(common.DATE): '2026-12-01 10:00',
                              }[id(schema)] + '\n', 'f')
