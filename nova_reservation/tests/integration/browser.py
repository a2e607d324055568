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

"""Horizon in headless Chromium: the login, page checks and screenshots
that the dashboard tests share.
"""

import datetime
import os
import shutil
import tempfile
from typing import Optional

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from devcloud.localcloud import cloud
from devcloud.localcloud import debian
from nova_reservation.tests.integration import base

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
DASHBOARD = cloud.url('dashboard')
API_DATE = '%Y-%m-%dT%H:%M:%S.%f'
SHOWN_DATE = '%Y-%m-%d %H:%M UTC'   # the dashboard's dates, in UTC here
OUTPUT = os.environ.get('TEST_OUTPUT_DIR') or os.path.join(
    cloud.ROOT, '.test-output')
# Horizon's error pages (their titles).
ERROR_PAGES = ('Server error', 'Page Not Found', 'Forbidden')
# Every stylesheet of the page loaded, with rules: Horizon's look, not
# its bare HTML.
STYLED = """return Array.from(document.querySelectorAll(
    'link[rel="stylesheet"]')).every(l => l.sheet && l.sheet.cssRules.length)
    && document.styleSheets.length > 0 && !!window.horizon"""


def _ensure_chromium() -> None:
    """Debian's Chromium and its driver, installed if missing (never a
    download by Selenium).
    """
    if not os.path.exists(CHROMEDRIVER):
        debian.install('chromium', 'chromium-driver')


class DashboardTestCase(base.BlazarCLI):

    def setUp(self) -> None:
        super().setUp()
        if 'horizon' not in base.CLOUD.running():
            self.fail('the dashboard does not run: tools/localcloud down, '
                      'then up')
        _ensure_chromium()
        self.shots = os.path.join(OUTPUT, 'screenshots',
                                  self.id().rsplit('.', 1)[-1])
        shutil.rmtree(self.shots, ignore_errors=True)
        os.makedirs(self.shots)
        self.shot = 0
        self.browser = self.chromium()
        self.wait = WebDriverWait(self.browser, 30)
        self.addOnException(lambda exc_info: self.screenshot('failed'))

    def chromium(self) -> webdriver.Chrome:
        profile = tempfile.mkdtemp(prefix='chromium-')
        self.addCleanup(shutil.rmtree, profile, ignore_errors=True)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ('--headless', '--no-sandbox', '--disable-gpu',
                    '--disable-quic', '--no-first-run',
                    '--disable-background-networking',
                    '--disable-component-update', '--disable-sync',
                    '--user-data-dir=' + profile, '--window-size=1400,1000'):
            options.add_argument(arg)
        browser = webdriver.Chrome(service=Service(CHROMEDRIVER),
                                   options=options)
        self.addCleanup(browser.quit)
        return browser

    # ------------------------------------------------------------ pages
    def open(self, path: str, name: str) -> None:
        """A page of the dashboard, checked (see `checked`)."""
        self.browser.get(DASHBOARD + path)
        self.checked(name)

    def checked(self, name: str) -> None:
        """The page shown is Horizon's, styled, with no error message; its
        screenshot is kept as `name`.
        """
        self.wait.until(lambda b: b.execute_script(
            'return document.readyState') == 'complete')
        self.screenshot(name)
        url, title = self.browser.current_url, self.browser.title
        self.assertTrue(title.endswith('OpenStack Dashboard') and not any(
            error in title for error in ERROR_PAGES), '%s: %s' % (url, title))
        self.assertTrue(self.browser.execute_script(STYLED),
                        '%s: not styled' % url)
        self.assertEqual([], self.errors(), url)

    def screenshot(self, name: str) -> None:
        self.shot += 1
        self.browser.save_screenshot(os.path.join(
            self.shots, '%02d-%s.png' % (self.shot, name)))

    def errors(self) -> list:
        return [e.text for e in self.browser.find_elements(
            By.CSS_SELECTOR, '.alert-danger') if e.is_displayed()]

    def success(self) -> str:
        """The success message shown (before it fades away); an error
        message fails the test.
        """
        shown = self.wait.until(ec.visibility_of_element_located((
            By.CSS_SELECTOR, '.alert-success, .alert-danger')))
        self.assertIn('alert-success', shown.get_attribute('class'),
                      shown.text)
        return shown.text

    def another_browser(self) -> None:
        """A browser of its own for the next user: one that shares nothing
        with the last (a table's status poll still in flight could set
        the last user's session cookie again after a logout).
        """
        self.browser = self.chromium()
        self.wait = WebDriverWait(self.browser, 30)

    def login(self, user: str) -> None:
        self.open('/auth/login/', 'login')
        self.browser.find_element(By.ID, 'id_username').send_keys(user)
        self.browser.find_element(By.ID, 'id_password').send_keys(
            cloud.password(user))
        self.browser.find_element(By.ID, 'loginBtn').click()
        self.wait.until(lambda b: '/auth/login/' not in b.current_url)
        self.wait.until(ec.visibility_of_element_located((
            By.CSS_SELECTOR, '.user-menu .user-name')))
        self.checked('logged-in-%s' % user)
        self.assertEqual(user, self.browser.find_element(
            By.CSS_SELECTOR, '.user-menu .user-name').text)
        self.assertIn(cloud.USERS[user][0], self.browser.find_element(
            By.CSS_SELECTOR, '.context-project').text)

    def navigate(self, *entries: str) -> None:
        """Through the sidebar's menus, as a user finds a panel."""
        sidebar = self.browser.find_element(By.ID, 'sidebar')
        for entry in entries:
            self.wait.until(lambda b: sidebar.find_element(
                By.LINK_TEXT, entry).is_displayed())
            sidebar.find_element(By.LINK_TEXT, entry).click()

    def still(self, element_id: str) -> None:
        """Once an element stops changing (a chart's animations over)."""
        last = [None]

        def same(browser):
            html = browser.find_element(By.ID, element_id).get_attribute(
                'innerHTML')
            done, last[0] = html == last[0], html
            return done
        WebDriverWait(self.browser, 30, poll_frequency=0.5).until(same)

    def row(self, text: str) -> Optional[WebElement]:
        """The row of the page's table whose link reads `text` (a lease's
        or a host's name): exactly, as compute1 is not another lane's
        compute1-l1.
        """
        found = self.browser.find_elements(
            By.XPATH, '//table//tbody/tr[.//a[normalize-space()="%s"]]'
            % text)
        return found[0] if found else None

    def choose(self, field: str, value: str) -> None:
        """An option of one of Horizon's themable selects."""
        select = self.browser.find_element(By.ID, field).find_element(
            By.XPATH, '..')
        select.find_element(By.CSS_SELECTOR, 'button.dropdown-toggle').click()
        select.find_element(By.CSS_SELECTOR,
                            'a[data-select-value="%s"]' % value).click()

    def submit_modal(self) -> None:
        self.browser.find_element(
            By.CSS_SELECTOR, '.modal-footer input[type="submit"]').click()

    # ------------------------------------------------------------- API
    def lease_api(self, lease_id: str, user: str = 'alice'
                  ) -> Optional[dict]:
        answer = base.CLOUD.session(user).get(
            '%s/%s' % (base.LEASES, lease_id), raise_exc=False)
        if answer.status_code == 404:
            return None
        self.assertEqual(200, answer.status_code, answer.text)
        return answer.json()['lease']

    def end(self, lease_id: str) -> datetime.datetime:
        return datetime.datetime.strptime(self.lease_api(lease_id)[
            'end_date'], API_DATE).replace(tzinfo=datetime.timezone.utc)

    def leases_named(self, user: str, name: str) -> list:
        return [lease for lease in self.openstack(
            user, 'reservation', 'lease', 'list') if lease['name'] == name]
