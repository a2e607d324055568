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

"""Projects in Keystone (GET /v3/projects/{id}), and the check that the
other projects a request names (a quota's, a share's, a split's) exist.

A project is asked for with the caller's token; where that token may not
see it (a member asking for another project gets a 403, whether it exists
or not) or there is none, with the service credentials of
``[reservation]``.  Projects found are kept a minute; a project Keystone
does not know is asked for again each time.
"""

import threading
import time
from typing import Iterable, Optional

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
from nova import utils as nova_utils
from oslo_log import log as logging

from nova_reservation.clients import trusts
from nova_reservation import conf
from nova_reservation import exception

LOG = logging.getLogger(__name__)
CONF = conf.CONF
# Seconds a project found in Keystone is taken as existing without asking.
KNOWN_TTL = 60
# A request that names more projects than this that are not known from
# the last minute has them found in a list of Keystone's projects (kept
# LIST_TTL seconds) instead of asking for each; of those not in that list
# (made since, or not there), at most this many are asked for.
LIST_FROM = 5
LIST_TTL = 10

_KNOWN: dict = {}
_LISTING: dict = {}
_LOCK = threading.Lock()


def forget() -> None:
    """Forget what Keystone told (for another Keystone: tests)."""
    with _LOCK:
        _KNOWN.clear()
        _LISTING.clear()


def _caller(ctx) -> Optional[ks_adapter.Adapter]:
    if ctx is None or not getattr(ctx, 'auth_token', None):
        return None
    return nova_utils.get_ksa_adapter(
        'identity', ksa_auth=ctx.get_auth_plugin(), min_version=(3, 0),
        max_version=(3, 'latest'))


def _service() -> Optional[ks_adapter.Adapter]:
    return trusts.identity() if trusts.has_credentials() else None


def project(ctx, project_id: str) -> Optional[dict]:
    """Project `project_id` as Keystone shows it, or None if Keystone knows no
    such project; asked with `ctx`'s token (if any), then with the service
    credentials where that gives neither.  exception.KeystoneUnavailable.
    """
    reasons = []
    for credentials, identity in (('the caller\'s token',
                                   lambda: _caller(ctx)),
                                  ('the service credentials', _service)):
        try:
            adapter = identity()
            if adapter is None:
                continue
            resp = adapter.get('/projects/%s' % project_id, raise_exc=False)
        except ks_exceptions.ClientException as e:
            reasons.append('%s: %s' % (credentials, e))
            continue
        if resp.status_code == 200:
            found = resp.json().get('project') or {}
            if found.get('id') != project_id:
                # Not that project: "..", say, is Keystone's root once the
                # path is normalised.
                return None
            with _LOCK:
                _KNOWN[project_id] = time.monotonic() + KNOWN_TTL
            return found
        if resp.status_code == 404:
            return None
        reasons.append('%s: Keystone answered %d' % (credentials,
                                                     resp.status_code))
    raise exception.KeystoneUnavailable(
        '; '.join(reasons) or 'the request has no token and '
        '[reservation] no Keystone credentials')


def _known(project_id: str) -> bool:
    """Whether Keystone showed project `project_id`, or listed it, in
    the last `KNOWN_TTL` seconds.
    """
    with _LOCK:
        return _KNOWN.get(project_id, 0) > time.monotonic()


def exists(ctx, project_id: str) -> bool:
    """Whether Keystone knows project `project_id` (`project`); one
    `_known` is not asked for again.  exception.KeystoneUnavailable.
    """
    return _known(project_id) or project(ctx, project_id) is not None


def _listed(again: bool = False) -> tuple:
    """(ids of the projects Keystone lists to the service credentials,
    whether that is all of them), as listed in the last `LIST_TTL`
    seconds (`again`: now); nothing where it lists none.
    """
    with _LOCK:
        kept = _LISTING.get('projects')
    if not again and kept is not None and kept[0] > time.monotonic():
        return kept[1], kept[2]
    adapter = _service()
    if adapter is None:
        return set(), False
    try:
        resp = adapter.get('/projects', raise_exc=False)
    except ks_exceptions.ClientException as e:
        LOG.warning('Keystone did not list its projects: %s', e)
        return set(), False
    if resp.status_code != 200:
        return set(), False
    found = resp.json()
    listed = {p['id'] for p in found.get('projects', ())}
    # Keystone's list_limit may cut the list short.
    complete = not found.get('truncated', False)
    now = time.monotonic()
    with _LOCK:
        _KNOWN.update(dict.fromkeys(listed, now + KNOWN_TTL))
        _LISTING['projects'] = (now + LIST_TTL, listed, complete)
    return listed, complete


def check(ctx, named: Iterable[tuple]) -> None:
    """Refuse the projects of `named`, (field, project id) pairs, that Keystone
    does not know: InvalidParam on the first one's field.
    exception.KeystoneUnavailable where Keystone can not be asked, unless
    ``[reservation] project_check_on_failure`` is ``accept``: then the rest are
    taken unchecked (logged).

    More than `LIST_FROM` projects not known from the last minute are
    looked for in a list of Keystone's projects, and at most `LIST_FROM`
    of those not in a whole list are asked for, so that a request costs
    at most a list and a few look-ups, whatever it names.
    """
    named = list(named)
    complete, again = False, True
    if len({p for _, p in named if not _known(p)}) > LIST_FROM:
        # (What a list holds is known from then on.)
        complete = _listed()[1]
    unlisted = 0
    for i, (field, project_id) in enumerate(named):
        try:
            if _known(project_id):
                continue
            unlisted += complete
            if unlisted > LIST_FROM and again:
                # More projects made since the list was kept than a few:
                # listed again, once.
                complete, again, unlisted = _listed(True)[1], False, 0
                if _known(project_id):
                    continue
            if unlisted > LIST_FROM or not exists(ctx, project_id):
                raise exception.InvalidParam(
                    field, 'project %s is not known to Keystone'
                    % project_id)
        except exception.KeystoneUnavailable as e:
            if CONF.reservation.project_check_on_failure != 'accept':
                raise exception.KeystoneUnavailable(
                    'Keystone could not be asked whether '
                    'project %s exists (%s); try again'
                    % (project_id, e))
            # Asking again for the others would only wait again.
            LOG.warning('Keystone could not be asked whether project %s '
                        'exists (%s): %s taken unchecked '
                        '(project_check_on_failure = accept)', project_id,
                        e, ', '.join(sorted({p for _, p in named[i:]})))
            return
