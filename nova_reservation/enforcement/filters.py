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

"""The usage enforcement filters, one rule each, as Blazar names them:
each judges a lease's create, change and end, and refuses by raising
`EnforcementRefused` (with the filter's name).
"""

from typing import Optional

from oslo_log import log as logging

from nova_reservation.clients import trusts
from nova_reservation import conf
from nova_reservation.enforcement import external
from nova_reservation import exception

LOG = logging.getLogger(__name__)
CONF = conf.CONF


class BaseFilter:
    """A usage enforcement filter: its checks return to let the lease
    through, or raise `refuse`'s error; `context` and the leases are the
    bodies of `enforcement.body`.
    """

    def refuse(self, message: str,
               error: type = exception.EnforcementRefused
               ) -> exception.ReservationError:
        """`error` (a refusal, or a service not answering), saying this
        filter's name.
        """
        return error('%s: %s' % (type(self).__name__, message),
                     filter=type(self).__name__)

    def check_create(self, context: dict, lease: dict) -> None:
        pass

    def check_update(self, context: dict, current_lease: dict,
                     lease: dict) -> None:
        pass

    def on_end(self, context: dict, lease: dict) -> None:
        pass


class MaxLeaseDurationFilter(BaseFilter):
    """A lease lasts at most ``max_lease_duration`` seconds, unless its
    project is exempt.
    """

    def _check(self, context: dict, lease: dict) -> None:
        limit = CONF.enforcement.max_lease_duration
        if limit == -1 or context['project_id'] in \
                CONF.enforcement.max_lease_duration_exempt_project_ids:
            return
        length = lease['end_date'] - lease['start_date']
        if length.total_seconds() > limit:
            raise self.refuse(
                'the lease lasts %d seconds, more than the %d allowed' % (
                    length.total_seconds(), limit))

    def check_create(self, context: dict, lease: dict) -> None:
        self._check(context, lease)

    def check_update(self, context: dict, current_lease: dict,
                     lease: dict) -> None:
        self._check(context, lease)


class ExternalServiceFilter(BaseFilter):
    """An operator's service decides (`external`): the same endpoints,
    bodies and answers as Blazar's filter of this name.
    """

    ENDPOINTS = {'check-create': 'external_service_check_create_endpoint',
                 'check-update': 'external_service_check_update_endpoint',
                 'on-end': 'external_service_on_end_endpoint'}

    def _url(self, path: str) -> Optional[str]:
        options = CONF.enforcement
        base = options.external_service_base_endpoint
        external.check_url('external_service_base_endpoint', base)
        instead = getattr(options, self.ENDPOINTS[path])
        external.check_url(self.ENDPOINTS[path], instead)
        if not base and not any(getattr(options, o)
                                for o in self.ENDPOINTS.values()):
            raise exception.EnforcementMisconfigured(
                '[enforcement] sets none of its endpoints')
        return external.endpoint(base, path, instead)

    @staticmethod
    def _token() -> Optional[str]:
        """The static token, else one of the service user, else none."""
        if CONF.enforcement.external_service_token:
            return CONF.enforcement.external_service_token
        if not trusts.has_credentials():
            return None
        try:
            return trusts.service_session().get_token()
        except Exception as e:   # Keystone's failures are many
            raise exception.EnforcementUnanswered(
                'no token of the service user could be had from Keystone '
                '(%s)' % type(e).__name__)

    def _ask(self, path: str, body: dict) -> None:
        """Ask the service at `path`; refused where it refuses or, unless
        told to accept then, where it gives no answer Blazar acts on.
        """
        try:
            url = self._url(path)
        except exception.EnforcementMisconfigured as e:
            LOG.error('Usage enforcement: %s', e)
            # The operator's settings are theirs to read, in the log.
            raise self.refuse('it is misconfigured; try again later',
                              exception.EnforcementMisconfigured)
        if url is None:
            return
        try:
            message = external.post(
                url, body, self._token(),
                CONF.enforcement.external_service_timeout)
        except exception.EnforcementUnanswered as e:
            if CONF.enforcement.external_service_on_failure == 'accept':
                LOG.warning('Usage enforcement service %s: %s; taken as '
                            'accepted (external_service_on_failure = '
                            'accept)', url, e)
                return
            LOG.warning('Usage enforcement service %s: %s', url, e)
            raise self.refuse(
                'the usage enforcement service (%s) gave no verdict: %s; '
                'try again later' % (path, e),
                exception.EnforcementUnanswered)
        if message is not None:
            raise self.refuse(message)

    def check_create(self, context: dict, lease: dict) -> None:
        self._ask('check-create', {'context': context, 'lease': lease})

    def check_update(self, context: dict, current_lease: dict,
                     lease: dict) -> None:
        self._ask('check-update', {'context': context,
                                   'current_lease': current_lease,
                                   'lease': lease})

    def on_end(self, context: dict, lease: dict) -> None:
        self._ask('on-end', {'context': context, 'lease': lease})


# The filters by the name ``enabled_filters`` gives them.
FILTERS = {f.__name__: f for f in (MaxLeaseDurationFilter,
                                   ExternalServiceFilter)}
