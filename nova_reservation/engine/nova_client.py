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

"""The engine's hands: Nova's REST API through keystoneauth1."""

import functools
import threading
from typing import Optional

from keystoneauth1 import loading as ks_loading

from nova_reservation.clients import trusts
from nova_reservation import conf
from nova_reservation.exception import NovaError
from nova_reservation.exception import NovaNotFound
from nova_reservation import marks

CONF = conf.CONF


class NovaClient:
    """The few compute calls the engine makes, as an admin."""

    def __init__(self, adapter) -> None:
        self.adapter = adapter
        self._environment_read = False
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, trust_id: Optional[str] = None) -> 'NovaClient':
        """The engine's client; as the owner of trust `trust_id` (a
        lease's, `trusts`) if given.
        """
        group = conf.GROUP
        auth = trusts.auth(trust_id)
        session = ks_loading.load_session_from_conf_options(CONF, group,
                                                            auth=auth)
        return cls(ks_loading.load_adapter_from_conf_options(
            CONF, group, session=session, auth=auth))

    def _read_environment_once(self) -> None:
        """Take the proxy and CA bundle variables for Nova's endpoint now,
        once: requests reads them, and ~/.netrc, at every call otherwise,
        which costs about as much as the call itself.  (keystoneauth sends
        the token: netrc has nothing to add.)
        """
        with self._lock:
            if self._environment_read:
                return
            endpoint = self.adapter.get_endpoint()
            if not endpoint:
                return   # The call itself says why.
            session = self.adapter.session
            http = session.session
            settings = http.merge_environment_settings(
                endpoint, {}, None, session.verify, None)
            http.proxies.update(settings['proxies'])
            session.verify = settings['verify']
            http.trust_env = False
            self._environment_read = True

    def _call(self, method: str, url: str, body=None, ok=(200, 202, 204)):
        if not self._environment_read:
            self._read_environment_once()
        resp = self.adapter.request(
            url, method, json=body, raise_exc=False,
            headers={'OpenStack-API-Version':
                     'compute %s' % CONF.reservation.compute_microversion})
        if resp.status_code == 404:
            raise NovaNotFound(url)
        if resp.status_code not in ok:
            raise NovaError('%s %s: %s %s' % (method, url, resp.status_code,
                                              resp.text[:500]))
        return resp.json() if resp.content else None

    def server(self, uuid: str) -> dict:
        return self._call('GET', '/servers/%s' % uuid)['server']

    def servers(self, page: int = 1000, tag: Optional[str] = None) -> list:
        """Every server of every project (detail), page by page (`tag`:
        those with that tag).
        """
        found, marker = [], None
        while True:
            url = '/servers/detail?all_tenants=1&limit=%d' % page
            if tag:
                url += '&tags=%s' % tag
            if marker:
                url += '&marker=%s' % marker
            batch = self._call('GET', url)['servers']
            found.extend(batch)
            if len(batch) < page:
                return found
            marker = batch[-1]['id']

    def action(self, uuid: str, name: str, args=None):
        return self._call('POST', '/servers/%s/action' % uuid, {name: args})

    def delete(self, uuid: str) -> None:
        self._call('DELETE', '/servers/%s' % uuid)

    def set_metadata(self, uuid: str, metadata: dict) -> None:
        """Set these metadata items of the server (others stay)."""
        self._call('POST', '/servers/%s/metadata' % uuid,
                   {'metadata': metadata})

    def add_tag(self, uuid: str, tag: str) -> None:
        self._call('PUT', '/servers/%s/tags/%s' % (uuid, tag),
                   ok=(201, 204))

    def aggregates(self) -> list:
        return self._call('GET', '/os-aggregates')['aggregates']

    def aggregate(self, name: str, metadata: dict) -> int:
        """The id of the aggregate `name`, made with `metadata` if new."""
        for agg in self.aggregates():
            if agg['name'] == name:
                return agg['id']
        agg = self._call('POST', '/os-aggregates',
                         {'aggregate': {'name': name}})['aggregate']
        self._call('POST', '/os-aggregates/%s/action' % agg['id'],
                   {'set_metadata': {'metadata': metadata}})
        return agg['id']

    def aggregate_host(self, aggregate_id: int, host: str,
                       add: bool) -> None:
        """Add or remove a host; already done is fine (idempotent)."""
        action = 'add_host' if add else 'remove_host'
        try:
            self._call('POST', '/os-aggregates/%s/action' % aggregate_id,
                       {action: {'host': host}}, ok=(200,))
        except (NovaError, NovaNotFound) as e:
            if '409' not in str(e) and not isinstance(e, NovaNotFound):
                raise

    def delete_aggregate(self, aggregate_id: int) -> None:
        """Delete an aggregate, with the hosts it still has (those of a
        split's new lease, whose own aggregate holds them too).
        """
        try:
            hosts = self._call('GET', '/os-aggregates/%s' % aggregate_id,
                               ok=(200,))['aggregate']['hosts']
        except NovaNotFound:
            return
        for host in hosts or ():
            self.aggregate_host(aggregate_id, host, add=False)
        try:
            self._call('DELETE', '/os-aggregates/%s' % aggregate_id,
                       ok=(200, 204))
        except NovaNotFound:
            pass

    def flavor_access(self, flavor_id: str, project_id: str) -> None:
        try:
            self._call('POST', '/flavors/%s/action' % flavor_id,
                       {'addTenantAccess': {'tenant': project_id}},
                       ok=(200,))
        except NovaError as e:
            if '409' not in str(e):
                raise

    def delete_flavor(self, flavor_id: str) -> None:
        try:
            self._call('DELETE', '/flavors/%s' % flavor_id, ok=(202, 204))
        except NovaNotFound:
            pass

    def delete_server_group(self, group_id: str) -> None:
        try:
            self._call('DELETE', '/os-server-groups/%s' % group_id,
                       ok=(204,))
        except NovaNotFound:
            pass

    def failed_nodes(self) -> set:
        """Nodes whose nova-compute service is down or disabled."""
        services = self._call('GET', '/os-services?binary=nova-compute')[
            'services']
        # A maintenance window's node has not failed: its leases around
        # the window stay.
        failed = {s['host'] for s in services
                  if s['state'] == 'down' or s['status'] == 'disabled' and
                  not marks.by_maintenance(s)}
        if not failed:
            return set()
        hypervisors = self._call('GET', '/os-hypervisors/detail')[
            'hypervisors']
        return {h['hypervisor_hostname'] for h in hypervisors
                if h['service']['host'] in failed}

    def compute_services(self, host: str) -> list:
        """The nova-compute services of `host` (one, but for a host that
        was renamed).
        """
        return self._call('GET', '/os-services?binary=nova-compute&host=%s'
                          % host)['services']

    def set_service(self, service_id: str, enabled: bool,
                    reason: Optional[str] = None) -> None:
        """Enable or disable (with `reason`) a compute service (its uuid,
        microversion 2.53 and later).
        """
        body = {'status': 'enabled' if enabled else 'disabled'}
        if not enabled:
            body['disabled_reason'] = reason
        self._call('PUT', '/os-services/%s' % service_id, body)

    def nodes_by_host(self) -> dict:
        """{compute service host: the nodes it serves}."""
        found: dict = {}
        for hyp in self._call('GET', '/os-hypervisors/detail')[
                'hypervisors']:
            found.setdefault(hyp['service']['host'], set()).add(
                hyp['hypervisor_hostname'])
        return found

    def host_of_node(self, node: str) -> str:
        found = self._call('GET', '/os-hypervisors/detail?'
                           'hypervisor_hostname_pattern=%s' % node)
        for hyp in found['hypervisors']:
            if hyp['hypervisor_hostname'] == node:
                return hyp['service']['host']
        raise NovaNotFound('node %s' % node)


@functools.lru_cache(maxsize=64)
def owner(trust_id: str) -> NovaClient:
    """The client of a lease's owner, through its trust (one per trust,
    which keeps its token while it is valid).
    """
    return NovaClient.from_conf(trust_id)
