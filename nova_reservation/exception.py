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

"""What goes wrong in nova-reservation, one class per meaning, named by
what went wrong.

The message says what and why, naming the field where one is wrong.
Nothing here knows HTTP: the lease API answers these in Blazar's shape
(`api.fault_wrap`), the boot hook in Nova's (`hooks.faults`), each in
one place.  `kind` is the error's name in the lease API's answers, as
Blazar names it; `details()` what an answer carries besides the message.
"""

import datetime
from typing import Any, Optional


class ReservationError(Exception):
    """What was asked of nova-reservation could not be done."""

    kind = 'Error'
    # Said where no message is given.
    default = 'the request could not be done'

    def __init__(self, message: Optional[str] = None,
                 kind: Optional[str] = None, **details: Any) -> None:
        super().__init__(message or self.default)
        if kind is not None:
            self.kind = kind
        self._details = details

    def details(self) -> dict:
        return dict(self._details)


# -------------------------------------------- what was asked can not be

class Invalid(ReservationError):
    """A request's field holds what can not be."""

    kind = 'InvalidInput'


class InvalidParam(Invalid, ValueError):
    """`field` holds a value that is wrong as `problem` says."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__('%s: %s' % (field, problem))
        self.field = field


class InvalidRequirements(Invalid, ValueError):
    """Host requirements (Blazar's JSON list) that can not be read."""


class Uncounted(Invalid, ValueError):
    """A server asks for what a lease's slot can not hold (the message
    follows the thing asked for, a flavor: "flavor 7 asks for ...").
    """


class AddressUnusable(InvalidParam):
    """A floating IP address that can not be registered (`field` says
    why).
    """


# ---------------------------------------------------- not for this caller

class NotAllowed(ReservationError):
    """The caller may not do this (a policy, a rule of the cloud)."""

    kind = 'PolicyNotAuthorized'


class OverQuota(NotAllowed):
    """A write would take a project past one of its limits: nothing was
    written (`excess`: the limit, and the figures before and after).
    """

    kind = 'QuotaExceeded'

    def __init__(self, excess: Any) -> None:
        super().__init__(excess.message(), **excess.details())
        self.excess = excess


class NotShared(NotAllowed):
    """The reservation is not (or no longer) shared with the project."""

    default = 'the reservation is not shared with the project'


class ApprovalRequired(NotAllowed):
    """The lease needs an admin's approval and can not wait for it."""


class EnforcementRefused(NotAllowed):
    """A usage enforcement filter refused the lease (`filter` names
    it).
    """

    kind = 'EnforcementRefused'


class NotFound(ReservationError):
    """What a request names does not exist (for this caller)."""

    kind = 'NotFound'


# ---------------------------------------------- not now, as things stand

class Conflict(ReservationError):
    """The state of a lease, a reservation or the ledger does not allow it
    now.
    """

    kind = 'Conflict'


class NoCapacity(Conflict):
    """No room for what a lease asks: `earliest` start that fits, the
    `latest_end` that fits, the `occurrence` of a recurring lease (from
    1) that does not fit, where known.
    """

    kind = 'NotEnoughCapacity'

    def __init__(self, message: str,
                 earliest: Optional[datetime.datetime] = None,
                 latest_end: Optional[datetime.datetime] = None,
                 occurrence: Optional[int] = None) -> None:
        super().__init__(message)
        self.earliest = earliest
        self.latest_end = latest_end
        self.occurrence = occurrence

    def details(self) -> dict:
        found = {}
        if self.occurrence is not None:
            found['occurrence'] = self.occurrence
        if self.earliest is not None:
            found['earliest_start'] = self.earliest.isoformat() + 'Z'
        if self.latest_end is not None:
            found['latest_end'] = self.latest_end.isoformat() + 'Z'
        return found


class WindowBlocked(NoCapacity):
    """A maintenance window refused: the `leases` in its way
    ([{lease_id, reason}]).
    """

    kind = 'Conflict'

    def __init__(self, message: str, leases: tuple = ()) -> None:
        super().__init__(message)
        self.leases = list(leases)

    def details(self) -> dict:
        return {'leases': self.leases} if self.leases else {}


class LeaseChanged(Conflict):
    """The lease changed since it was read: nothing was written."""

    default = 'the lease changed meanwhile; read it again and retry'


class LedgerConflict(Conflict):
    """The ledger changed since it was read: read it again and retry."""

    default = 'the ledger changed meanwhile; try again'


class LedgerBusy(Conflict):
    """The ledger changed under every plan made for a change."""

    default = 'the ledger is too busy to place the lease now; try again'


class TooFewToSplit(Conflict):
    """Fewer slots can move than a split asks for."""


class ClientTokenConflict(Conflict):
    """A client token that can not give a lease now."""


class ReservationUnusable(Conflict):
    """The reservation a boot names runs not now, or is full (with
    ``reservation_fallback``: an ordinary boot instead).
    """


# -------------------------------------------- a service could not be asked

class ServiceUnavailable(ReservationError):
    """A service or the store could not be asked: try again."""

    kind = 'ServiceUnavailable'


class PlacementUnavailable(ServiceUnavailable):
    """Placement answered with a server error (its database failed over,
    say).
    """


class NeutronUnavailable(ServiceUnavailable):
    """Neutron did not answer, or failed."""


class KeystoneUnavailable(ServiceUnavailable):
    """Keystone could not be asked (not reached, failed, or no token and
    no credentials may ask it).
    """


class TrustUnavailable(ServiceUnavailable):
    """Keystone could not make a lease's trust."""


class CellUnreachable(ServiceUnavailable):
    """A cell's database could not be read."""


class EnforcementUnanswered(ServiceUnavailable):
    """The usage enforcement service did not answer, or gave an answer
    that is neither an acceptance nor a refusal.
    """

    kind = 'EnforcementUnavailable'


class EnforcementMisconfigured(ServiceUnavailable):
    """A usage enforcement endpoint is not an http(s) URL with a host, or
    an unknown filter is enabled.
    """

    kind = 'EnforcementUnavailable'


# ------------------------------------------------ the engine's work on Nova

class NovaError(ReservationError):
    """Nova refused or failed a call of the engine's."""


class NovaNotFound(NovaError):
    """What the engine asked Nova for does not exist."""


class ActionFailed(ReservationError):
    """An event's action can not be carried out (it is retried, then
    ERROR).
    """


class VolumeFailed(ActionFailed):
    """Cinder refused or failed a volume (the start is tried again)."""
