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

"""The ledger calendar (nova_reservation.dashboard) in Horizon on the local
cloud, in a headless Chromium: an admin sees every node and the leases on
them; a project its own leases and the free capacity, and starts a lease
from a free window.  Screenshots as the dashboard's other tests keep them.
"""

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base
from nova_reservation.tests.integration import browser

LEDGER = 'http://%s:%d/reservation/v1/ledger' % (cloud.HOST,
                                                 cloud.PORTS['nova'])
FLAVOR = 'm1.tiny'


class CalendarTest(browser.DashboardTestCase):

    def ledger(self, user: str) -> dict:
        answer = base.CLOUD.session(user).get(LEDGER)
        self.assertEqual(200, answer.status_code, answer.text)
        return answer.json()['ledger']

    def flavor_lease(self, name: str) -> tuple:
        """(flavor id, alice's lease of one m1.tiny from now on)."""
        flavor = self.flavor_ref(self.flavor(FLAVOR))
        return flavor, self.lease('alice', name, 'resource_type=flavor:'
                                  'instance,flavor_id=%s,amount=1' % flavor)

    def bars(self, **data: str) -> list:
        """The calendar's bars whose data-* attributes have these values."""
        return [bar for bar in self.browser.find_elements(
            By.CSS_SELECTOR, '#reservation-calendar-nodes .rc-bar')
            if all(bar.get_attribute('data-' + key.replace('_', '-')) == value
                   for key, value in data.items())]

    def test_admin_calendar(self):
        name = 'calendar-admin-' + self.suffix
        _, lease = self.flavor_lease(name)
        # This lane's nodes: the calendar draws every lane's.
        own = self.lane_nodes()
        nodes = [n['name'] for n in self.ledger('admin')['nodes']
                 if n['name'] in own]
        self.assertTrue(nodes)
        self.login('admin')
        self.navigate('Admin', 'Reservation', 'Calendar')
        self.wait.until(ec.url_contains('/admin/calendar/'))
        self.checked('admin-calendar')
        shown = [row.get_attribute('data-node') for row in
                 self.browser.find_elements(By.CSS_SELECTOR,
                                            '.rc-row.rc-node')]
        self.assertEqual(nodes, [node for node in shown if node in own])
        for node in nodes:
            self.assertIn(node, self.browser.find_element(
                By.ID, 'reservation-calendar-nodes').text)
        bar, = self.bars(reservation=lease['reservation_id'])
        self.assertEqual(lease['id'], bar.get_attribute('data-lease'))
        self.assertEqual('flavor:instance', bar.get_attribute('data-type'))
        self.assertIn(name, bar.get_attribute('title'))
        self.assertTrue(bar.is_displayed())
        # Another period, from the GET form.
        days = self.browser.find_element(By.ID, 'period_days')
        days.clear()
        days.send_keys('2')
        self.browser.find_element(
            By.CSS_SELECTOR, '#reservation-calendar-period button').click()
        self.wait.until(ec.url_contains('days=2'))
        self.checked('admin-calendar-2-days')
        self.assertTrue(self.bars(reservation=lease['reservation_id']))

    def test_project_calendar_starts_a_lease(self):
        flavor, lease = self.flavor_lease('calendar-own-' + self.suffix)
        self.login('alice')
        self.navigate('Reservations', 'Calendar')
        self.wait.until(ec.url_contains('/project/calendar/'))
        self.checked('alice-calendar')
        self.assertTrue(self.bars(lease=lease['id']))
        # Only her own allocations: no ordinary servers (a bar of no
        # lease; her project's boot leases, which other lanes' tests make
        # meanwhile, are drawn as servers too), no node names.
        self.assertEqual([], self.bars(type='server', lease=''))
        for node in self.ledger('admin')['nodes']:
            self.assertNotIn('data-node="%s"' % node['name'],
                             self.browser.page_source)

        # A free window after the first (whose start has begun), of the
        # flavor leased.
        row = self.browser.find_element(
            By.CSS_SELECTOR, '#reservation-calendar-free tr[data-flavor="%s"]'
            % flavor)
        cells = row.find_elements(By.CSS_SELECTOR, 'td[data-count]')
        self.assertTrue(cells)
        free = [c for c in cells[1:] if int(c.get_attribute('data-count'))]
        self.assertTrue(free, 'no free window of %s' % self.flavor(FLAVOR))
        cell = free[0]
        start, end = (cell.get_attribute('data-start'),
                      cell.get_attribute('data-end'))
        cell.find_element(By.CSS_SELECTOR, 'a.rc-start-lease').click()
        self.wait.until(ec.visibility_of_element_located((
            By.ID, 'calendar_lease_modal')))
        for field, value in (('flavor_id', flavor), ('amount', '1'),
                             ('start', start), ('end', end)):
            self.assertEqual(value, self.browser.find_element(
                By.ID, 'id_' + field).get_attribute('value'), field)
        name = 'calendar-window-' + self.suffix
        field = self.browser.find_element(By.ID, 'id_name')
        field.clear()
        field.send_keys(name)
        self.screenshot('start-lease-form')
        self.submit_modal()
        self.assertIn('Lease %s was successfully created.' % name,
                      self.success())
        self.wait.until(ec.url_contains('/project/leases/'))
        self.checked('created')

        # The lease is the API's, for the window, as alice's CLI shows it.
        found = self.leases_named('alice', name)
        self.assertEqual(1, len(found), found)
        lease_id = found[0]['id']
        self.addCleanup(self.delete_lease, lease_id)
        made = self.wait_for('lease %s made' % name, lambda: (
            lambda x: x['status'] != 'CREATING' and x)(
                self.lease_api(lease_id)), timeout=60, interval=2)
        self.assertEqual('PENDING', made['status'])
        self.assertEqual((start, end), tuple(
            made[k][:16].replace('T', ' ') for k in ('start_date',
                                                     'end_date')))
        reservation, = made['reservations']
        self.assertEqual(('flavor:instance', flavor, 1), (
            reservation['resource_type'], reservation['flavor_id'],
            int(reservation['amount'])))

        # Drawn in the calendar, then gone once deleted.
        self.open('/project/calendar/', 'calendar-with-lease')
        self.assertTrue(self.bars(lease=lease_id))
        self.run_cli('alice', 'openstack', 'reservation', 'lease', 'delete',
                     lease_id)
        self.wait_for('lease %s gone' % name,
                      lambda: self.lease_api(lease_id) is None,
                      timeout=60, interval=2)
        self.open('/project/calendar/', 'calendar-lease-deleted')
        self.assertEqual([], self.bars(lease=lease_id))
