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

"""Keystone trusts: the engine acting as a lease's owner.

A lease made with a Keystone token carries a trust of its owner (made with
the owner's token in nova-api) to the engine's user (``[reservation]``
credentials), impersonating, in the lease's project, with the owner's
roles.  The engine works in the owner's project through it where Nova
would otherwise make something in the engine's own: the volume a reserved
server boots from, the image of a snapshot or a shelve at the end.  The
trust is deleted when the lease is over.
"""

import threading
from typing import Optional

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from nova import utils as nova_utils
from oslo_log import log as logging

from nova_reservation import conf
from nova_reservation.exception import TrustUnavailable

LOG = logging.getLogger(__name__)
CONF = conf.CONF

_TRUSTEE: dict = {}
_LOCK = threading.Lock()
# The engine's own session, by the values of the options it was made of.
_SERVICE_SESSION: dict = {}
_SERVICE_LOCK = threading.Lock()


def _auth_group() -> str:
    """The group of the engine's auth plugin options: ``auth_section``'s
    where one is named, as keystoneauth reads them.
    """
    return CONF[conf.GROUP].auth_section or conf.GROUP


def has_credentials() -> bool:
    """Whether ``[reservation]`` gives the engine Keystone credentials."""
    return CONF[_auth_group()].auth_type not in (None, 'none')


def enabled() -> bool:
    """Whether leases get trusts: they are on, and the engine has Keystone
    credentials.
    """
    return bool(CONF.reservation.owner_trusts) and has_credentials()


def wanted(ctx) -> bool:
    """Whether a lease of the caller of `ctx` gets a trust: trusts are
    `enabled` and the caller has a token.
    """
    return enabled() and bool(getattr(ctx, 'auth_token', None))


def auth(trust_id: Optional[str] = None):
    """The engine's credentials (``[reservation]``); scoped to trust
    `trust_id` (as its owner, in its project) if given.
    """
    scope = dict(trust_id=trust_id, project_id=None, project_name=None,
                 project_domain_id=None, project_domain_name=None
                 ) if trust_id else {}
    return ks_loading.load_auth_from_conf_options(CONF, conf.GROUP, **scope)


def session(trust_id: Optional[str] = None):
    """A session of the engine's user; as the owner of trust `trust_id`
    if given.
    """
    return ks_loading.load_session_from_conf_options(
        CONF, conf.GROUP, auth=auth(trust_id))


def _credentials() -> tuple:
    """The values of the ``[reservation]`` options that the engine's
    session and its auth plugin are made of (the plugin's from
    ``auth_section``'s group where one is named, as keystoneauth reads
    them).
    """
    group = _auth_group()
    auth_type = CONF[group].auth_type
    values = [getattr(CONF[conf.GROUP], o.dest, None)
              for o in ks_loading.get_session_conf_options()]
    if auth_type:
        # A plugin's options are registered as it is loaded: one not yet
        # registered is not set either.
        values += [getattr(CONF[group], o.dest, None) for o in
                   ks_loading.get_auth_plugin_conf_options(auth_type)]
    # Lists (TLS ciphers, say) as text, to be a key.
    return (group, auth_type) + tuple(repr(v) for v in values)


def service_session() -> ks_session.Session:
    """The session of the engine's user, made once per process and again
    when the ``[reservation]`` credentials change: its token is kept, and
    a new one asked of Keystone when it expires, rather than one for each
    call.  Only for the engine's own credentials, never a trust's.
    """
    key = _credentials()
    with _SERVICE_LOCK:
        made = _SERVICE_SESSION.get(key)
        if made is None:
            _SERVICE_SESSION.clear()
            made = _SERVICE_SESSION[key] = session()
        return made


def identity() -> ks_adapter.Adapter:
    """Keystone's v3 API with the engine's own credentials."""
    return ks_adapter.Adapter(
        service_session(), service_type='identity', interface='public',
        min_version=(3, 0), max_version=(3, 'latest'))


def trustee() -> Optional[str]:
    """The engine's user id (asked of Keystone once per process); None
    where its credentials name no user (an admin token, say).
    """
    with _LOCK:
        if not _TRUSTEE.get('id'):
            # None from a plugin that has no user (asked again next time).
            _TRUSTEE['id'] = service_session().get_user_id()
        return _TRUSTEE['id']


def make(ctx) -> Optional[str]:
    """A trust of the caller of `ctx` to the engine; None where Keystone
    does not let this token delegate (an application credential's, say:
    the engine then acts in its own project); TrustUnavailable.
    """
    try:
        engine = trustee()
        if not engine:
            LOG.warning('The engine\'s credentials name no Keystone user: '
                        'it acts for the lease of user %s in its own '
                        'project', ctx.user_id)
            return None
        identity = nova_utils.get_ksa_adapter(
            'identity', ksa_auth=ctx.get_auth_plugin(), min_version=(3, 0),
            max_version=(3, 'latest'))
        resp = identity.post('/OS-TRUST/trusts', raise_exc=False, json={
            'trust': {'trustor_user_id': ctx.user_id,
                      'trustee_user_id': engine,
                      'project_id': ctx.project_id,
                      'impersonation': True,
                      'roles': [{'name': r} for r in ctx.roles]}})
    except ks_exceptions.ClientException as e:
        raise TrustUnavailable('Keystone could not be reached: %s' % e)
    if resp.status_code in (401, 403):
        LOG.warning('User %s of project %s can not delegate with this '
                    'token (%d): the engine acts for the lease in its own '
                    'project', ctx.user_id, ctx.project_id,
                    resp.status_code)
        return None
    if resp.status_code != 201:
        raise TrustUnavailable('Keystone answered %d: %s' % (
            resp.status_code, resp.text[:200]))
    return resp.json()['trust']['id']


def given() -> set:
    """The ids of the trusts to the engine's user; TrustUnavailable."""
    try:
        engine = trustee()
        if not engine:
            # Without it Keystone would list every trust.
            raise TrustUnavailable('the engine\'s credentials name no user')
        resp = identity().get('/OS-TRUST/trusts', raise_exc=False,
                              params={'trustee_user_id': engine})
    except ks_exceptions.ClientException as e:
        raise TrustUnavailable('Keystone could not be reached: %s' % e)
    if resp.status_code != 200:
        raise TrustUnavailable('Keystone answered %d: %s' % (
            resp.status_code, resp.text[:200]))
    return {t['id'] for t in resp.json()['trusts']}


def delete(trust_id: Optional[str]) -> None:
    """Delete trust `trust_id` (one already gone is not an error)."""
    if not trust_id:
        return
    try:
        resp = identity().delete('/OS-TRUST/trusts/%s' % trust_id,
                                 raise_exc=False)
    except ks_exceptions.ClientException as e:
        raise TrustUnavailable('Keystone could not be reached: %s' % e)
    if resp.status_code not in (204, 404):
        raise TrustUnavailable('Keystone answered %d: %s' % (
            resp.status_code, resp.text[:200]))
