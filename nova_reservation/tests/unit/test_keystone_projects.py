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

"""What Keystone's answers make of a project a request names: which
credentials are asked, which answers tell, what is kept, and what
``project_check_on_failure`` lets through.
"""

import types

import fixtures
from keystoneauth1 import exceptions as ks_exceptions
from oslo_config import fixture as config_fixture
import testtools

from nova_reservation.clients import keystone_projects
from nova_reservation import conf
from nova_reservation import exception

P1, P2 = 'p1', 'p2'


class Identity:
    """Keystone as one set of credentials sees it: {project: status}, or
    an exception for every call.
    """

    def __init__(self, answers: dict, failure=None) -> None:
        self.answers = answers
        self.failure = failure
        self.asked: list = []

    def get(self, path: str, raise_exc: bool = True):
        project_id = path.rsplit('/', 1)[-1]
        self.asked.append(project_id)
        if self.failure is not None:
            raise self.failure
        if project_id in ('.', '..'):
            # The path normalised: Keystone's own root, or its list.
            return types.SimpleNamespace(status_code=200, json=lambda: {
                'version': {'id': 'v3.14'}})
        if path == '/projects':
            listing = self.answers.get('', 200)
            return types.SimpleNamespace(status_code=listing, json=lambda: {
                'projects': [{'id': p} for p, status in self.answers.items()
                             if status == 200 and p],
                'truncated': self.answers.get('truncated', 0) == 200})
        status = self.answers.get(project_id, 404)
        return types.SimpleNamespace(
            status_code=status,
            json=lambda: {'project': {'id': project_id, 'tags': ['t']}})


class KeystoneTestCase(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(conf.CONF))
        keystone_projects.forget()
        self.addCleanup(keystone_projects.forget)
        self.ctx = types.SimpleNamespace(auth_token='a-token')

    def keystone(self, caller=None, service=None) -> None:
        """The caller's token and the service credentials (None: none)."""
        self.useFixture(fixtures.MockPatch(
            'nova_reservation.clients.keystone_projects._caller',
            side_effect=lambda ctx: caller))
        self.useFixture(fixtures.MockPatch(
            'nova_reservation.clients.keystone_projects._service',
            side_effect=lambda: service))

    def check(self, *projects: str) -> None:
        keystone_projects.check(self.ctx, [
            ('shared_with[%d]' % i, p) for i, p in enumerate(projects)])


class CheckTest(KeystoneTestCase):

    def test_the_callers_token_tells_and_what_exists_is_kept(self):
        caller, service = Identity({P1: 200}), Identity({})
        self.keystone(caller, service)
        self.check(P1)
        self.check(P1)
        self.assertEqual(([P1], []), (caller.asked, service.asked))
        e = self.assertRaises(exception.InvalidParam, self.check, P1, P2)
        self.assertEqual('shared_with[1]: project p2 is not known to '
                         'Keystone', str(e))
        self.assertEqual('shared_with[1]', e.field)
        # A project not known is asked for again.
        self.assertRaises(exception.InvalidParam, self.check, P2)
        self.assertEqual([P1, P2, P2], caller.asked)
        self.assertEqual([], service.asked)

    def test_the_service_credentials_where_the_token_may_not_see_it(self):
        for answer in (403, 401, ks_exceptions.EndpointNotFound()):
            keystone_projects.forget()
            caller = (Identity({}, answer) if isinstance(answer, Exception)
                      else Identity({P1: answer, P2: answer}))
            service = Identity({P1: 200})
            self.keystone(caller, service)
            self.check(P1)
            e = self.assertRaises(exception.InvalidParam, self.check, P2)
            self.assertIn('project p2 is not known', str(e))
            self.assertEqual([P1, P2], service.asked, answer)

    def test_without_a_token_the_service_credentials(self):
        service = Identity({P1: 200})
        self.keystone(None, service)
        self.check(P1)
        self.assertEqual([P1], service.asked)

    def test_keystone_not_asked_refuses(self):
        for caller, service, words in (
                (Identity({P1: 403}), None, 'the caller\'s token: Keystone '
                 'answered 403'),
                (None, Identity({P1: 503}), 'the service credentials: '
                 'Keystone answered 503'),
                (None, Identity({}, ks_exceptions.ConnectFailure('down')),
                 'the service credentials: down'),
                (None, None, 'no token and [reservation] no Keystone '
                 'credentials')):
            self.keystone(caller, service)
            e = self.assertRaises(exception.KeystoneUnavailable,
                                  self.check, P1)
            self.assertIn('Keystone could not be asked whether project p1 '
                          'exists (', str(e))
            self.assertIn(words, str(e))
            self.assertTrue(str(e).endswith('; try again'), str(e))

    def test_accept_takes_the_rest_unchecked(self):
        self.conf.config(group='reservation',
                         project_check_on_failure='accept')
        service = Identity({}, ks_exceptions.ConnectFailure('down'))
        self.keystone(None, service)
        self.check(P1, P2)
        # Once Keystone failed, the others are not asked (nor kept).
        self.assertEqual([P1], service.asked)
        self.assertEqual({}, keystone_projects._KNOWN)
        # A project Keystone does not know is refused all the same.
        self.keystone(None, Identity({P1: 200}))
        self.assertRaises(exception.InvalidParam, self.check, P1, P2)

    def test_a_project_as_keystone_shows_it(self):
        self.keystone(Identity({P1: 200}), None)
        self.assertEqual({'id': P1, 'tags': ['t']},
                         keystone_projects.project(self.ctx, P1))
        self.assertIsNone(keystone_projects.project(self.ctx, P2))


class ListTest(KeystoneTestCase):
    """More projects than LIST_FROM that are not known from the last
    minute: one list of Keystone's projects.
    """

    MANY = ['p%02d' % i for i in range(keystone_projects.LIST_FROM + 1)]

    def test_many_projects_are_one_list(self):
        service = Identity(dict.fromkeys(self.MANY, 200))
        self.keystone(service=service)
        self.check(*self.MANY)
        self.assertEqual(['projects'], service.asked)
        # Known from the list: not asked for again.
        self.check(*self.MANY)
        self.assertEqual(['projects'], service.asked)

    def test_one_not_listed_is_refused(self):
        service = Identity(dict.fromkeys(self.MANY[1:], 200))
        self.keystone(service=service)
        e = self.assertRaises(exception.InvalidParam, self.check,
                              *self.MANY)
        self.assertEqual('shared_with[0]: project p00 is not known to '
                         'Keystone', str(e))
        # (Asked for too: it may be made since the list.)
        self.assertEqual(['projects', 'p00'], service.asked)

    def test_a_list_cut_short_asks_for_the_rest(self):
        answers = dict.fromkeys(self.MANY[1:], 200)
        answers['truncated'] = 200
        service = Identity(answers)
        self.keystone(service=service)
        e = self.assertRaises(exception.InvalidParam, self.check,
                              *self.MANY)
        self.assertIn('p00 is not known', str(e))
        self.assertEqual(['projects', 'p00'], service.asked)

    def test_a_list_not_allowed_asks_for_each(self):
        answers = dict.fromkeys(self.MANY, 200)
        answers[''] = 403
        service = Identity(answers)
        self.keystone(service=service)
        self.check(*self.MANY)
        self.assertEqual(['projects'] + self.MANY, service.asked)

    def test_a_few_are_asked_for_each(self):
        few = self.MANY[:keystone_projects.LIST_FROM]
        service = Identity(dict.fromkeys(few, 200))
        self.keystone(service=service)
        self.check(*few)
        self.assertEqual(few, service.asked)

    def test_a_list_is_kept_a_moment(self):
        service = Identity(dict.fromkeys(self.MANY, 200))
        self.keystone(service=service)
        made_up = ['no-%02d' % i for i in range(len(self.MANY))]
        for _ in range(3):
            self.assertRaises(exception.InvalidParam, self.check, *made_up)
        # One list, and one look-up of the first that is not in it, each
        # time: what a request costs does not grow with what it names.
        self.assertEqual(['projects', 'no-00', 'no-00', 'no-00'],
                         service.asked)

    def test_more_made_since_the_list_list_again(self):
        service = Identity(dict.fromkeys(self.MANY, 200))
        self.keystone(service=service)
        self.check(*self.MANY)
        # Made since the list was kept: a few asked for, then the list
        # made again, once.
        late = ['late-%02d' % i
                for i in range(keystone_projects.LIST_FROM + 2)]
        service.answers.update(dict.fromkeys(late, 200))
        self.check(*late)
        self.assertEqual(['projects'] + late[:keystone_projects.LIST_FROM]
                         + ['projects'], service.asked)
        # Made up, after a few made since: refused at its own look-up,
        # not listed a third time.
        later = ['later-%02d' % i
                 for i in range(keystone_projects.LIST_FROM + 1)]
        service.answers.update(dict.fromkeys(later, 200))
        del service.asked[:]
        e = self.assertRaises(exception.InvalidParam, self.check,
                              *(later + ['made-up'] * 2))
        self.assertIn('project made-up is not known', str(e))
        self.assertEqual(later[:keystone_projects.LIST_FROM] + [
            'projects', 'made-up'], service.asked)


class DotsTest(KeystoneTestCase):

    def test_dots_are_no_project(self):
        # Keystone's root answers 200 for /projects/.. once the path is
        # normalised: that is no project.
        for project_id in ('..', '.'):
            service = Identity({})
            self.keystone(service=service)
            e = self.assertRaises(exception.InvalidParam, self.check,
                                  project_id)
            self.assertIn('project %s is not known' % project_id, str(e))
            self.assertFalse(keystone_projects.exists(None, project_id))
