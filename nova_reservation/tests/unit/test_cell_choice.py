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

"""Which cell a recurring boot lease's servers keep to, and what a plan
kept to some nodes may take.
"""

import datetime
import types

import testtools

from nova_reservation import capacity
from nova_reservation.clients import cells
from nova_reservation import exception
from nova_reservation.lease import plan
from nova_reservation.lease.request import ReservationRequest
from nova_reservation.lease import resource_types
from nova_reservation.lease import service

NEED = capacity.Resources(1, 512, 1)
CELLS = {'c1': frozenset({'n1'}), 'c2': frozenset({'n2', 'n3'}),
         'down': None}


class Writer:
    """Refuses a series unless its server requests keep to `fits`."""

    def __init__(self, fits=None, earliest=None) -> None:
        self.fits = fits
        self.earliest = earliest or {}
        self.written = []

    def create_series(self, occurrences: list, quota=None) -> None:
        nodes = {r.nodes for _, requests, _ in occurrences
                 for r in requests
                 if r.resource_type == resource_types.SERVER}
        if nodes != {self.fits}:
            when = self.earliest.get(next(iter(nodes)))
            raise exception.NoCapacity(
                'no room in %s' % sorted(nodes.pop() or ()),
                when)
        self.written.append(occurrences)


class SeriesInOneCellTest(testtools.TestCase):

    def use_cells(self, *names: str) -> None:
        self.patch(cells, 'with_servers', lambda context: [
            types.SimpleNamespace(uuid=n) for n in names])

        def nodes_of(uuid):
            if CELLS[uuid] is None:
                raise exception.CellUnreachable('cell %s is down' % uuid)
            return CELLS[uuid]
        self.patch(cells, 'nodes_of', nodes_of)

    def occurrences(self) -> list:
        return [({'id': str(i)}, [
            ReservationRequest(resource_types.SERVER, 1, NEED),
            ReservationRequest(resource_types.FLOATINGIP, 1)], [])
            for i in range(2)]

    def test_one_cell_keeps_to_nothing(self):
        self.use_cells('c1')
        writer = Writer(fits=None)
        service._series_in_one_cell(writer, self.occurrences())
        self.assertEqual(1, len(writer.written))

    def test_the_first_cell_that_holds_every_occurrence(self):
        self.use_cells('c1', 'c2')
        writer = Writer(fits=CELLS['c2'])
        service._series_in_one_cell(writer, self.occurrences())
        written, = writer.written
        self.assertEqual([[CELLS['c2'], None]] * 2, [
            [r.nodes for r in requests] for _, requests, _ in written])

    def test_a_cell_that_does_not_answer_is_passed_over(self):
        self.use_cells('down', 'c1')
        writer = Writer(fits=CELLS['c1'])
        service._series_in_one_cell(writer, self.occurrences())
        self.assertEqual(1, len(writer.written))

    def test_refused_with_the_earliest_start_of_any_cell(self):
        self.use_cells('c1', 'down', 'c2')
        soon = datetime.datetime(2030, 1, 1)
        writer = Writer(fits=frozenset(), earliest={
            CELLS['c1']: None, CELLS['c2']: soon})
        e = self.assertRaises(exception.NoCapacity,
                              service._series_in_one_cell, writer,
                              self.occurrences())
        self.assertEqual(soon, e.earliest)
        self.assertIn('n2', str(e))

    def test_every_cell_down_is_unreachable(self):
        self.use_cells('down')
        self.patch(cells, 'with_servers', lambda context: [
            types.SimpleNamespace(uuid='down')] * 2)
        self.assertRaises(exception.CellUnreachable,
                          service._series_in_one_cell, Writer(),
                          self.occurrences())


class WithinTest(testtools.TestCase):

    def test_only_the_nodes_given(self):
        hosts = [capacity.Host(n, NEED) for n in ('n1', 'n2', 'n3')]
        pools = (hosts[:2], [(hosts[2], 'row')])
        self.assertIs(pools, plan.within(pools, None))
        self.assertEqual(([hosts[1]], [(hosts[2], 'row')]),
                         plan.within(pools, frozenset({'n2', 'n3'})))
        self.assertEqual(([], []), plan.within(pools, frozenset()))
