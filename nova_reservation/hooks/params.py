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

"""Validation of the lease hints of a boot request (pure, no I/O).

Every problem is an `InvalidParam` naming the field and what is wrong with
it, so that the API can answer 400 with a message a user can act on.
"""

import dataclasses
import datetime
import json
from typing import Optional

from nova_reservation import capacity
from nova_reservation.clients import flavors
from nova_reservation import exception
from nova_reservation.lease import shares
from nova_reservation import marks
from nova_reservation.schemas import common
from nova_reservation.schemas import leases as schemas
from nova_reservation import validation

InvalidParam = exception.InvalidParam
MAX_PARAMS_LENGTH = 4096


@dataclasses.dataclass(frozen=True)
class LeaseRequest:
    name: str
    start: datetime.datetime     # naive UTC
    end: datetime.datetime       # naive UTC
    on_end: str = 'delete'
    before_end: Optional[int] = None   # minutes before the end
    immediate: bool = False
    client_token: Optional[str] = None
    max_extensions: Optional[int] = None
    waiting: Optional[validation.Waiting] = None   # if_busy wait
    # [(start, end)] of each occurrence of a recurring lease (else None).
    occurrences: Optional[tuple] = None


def single_hint(hints: dict, key: str):
    """The value of a hint given once, or None when it is not given.

    Nova passes a hint given twice as a list; a lease takes one.  A hint
    given as null is refused: Nova itself can not take it.
    """
    if key not in hints:
        return None
    value = hints[key]
    if isinstance(value, list):
        if len(value) != 1:
            raise InvalidParam(key, 'given %d times; give it once'
                               % len(value))
        value = value[0]
    if value is None:
        raise InvalidParam(key, 'must not be null')
    return value


def reservation_hint(hints: dict) -> Optional[str]:
    """The id in the ``reservation`` hint, ``none`` (an ordinary boot that
    no open reservation takes), or None.
    """
    value = single_hint(hints, 'reservation')
    if isinstance(value, str) and value.lower() == shares.NONE:
        return shares.NONE
    if value is not None:
        validation.check(common.UUID, value, 'reservation')
    return value


def fallback_hint(hints: dict, reservation: Optional[str]) -> bool:
    """Whether the ``reservation_fallback`` hint asks that a boot into
    `reservation` (its ``reservation`` hint) that finds it full or not
    started run as an ordinary boot.
    """
    value = single_hint(hints, 'reservation_fallback')
    if value is None:
        return False
    if value != shares.FALLBACK_ANY:
        raise InvalidParam('reservation_fallback', 'must be %s (a boot that '
                           'finds its reservation full or not started runs '
                           'as an ordinary boot), not %s' % (
                               shares.FALLBACK_ANY,
                               json.dumps(value)[:40]))
    if reservation in (None, shares.NONE):
        raise InvalidParam('reservation_fallback', 'is given with the id of '
                           'a reservation in the reservation hint')
    return True


def lease_request(hints: dict, now: datetime.datetime, max_duration: int,
                  max_advance: int) -> Optional[LeaseRequest]:
    """The lease asked for by `hints`, or None for an ordinary boot."""
    reserved = single_hint(hints, 'reserved')
    raw = single_hint(hints, 'lease_params')
    if reserved is not None:
        if str(reserved).lower() != 'true':
            raise InvalidParam('reserved', 'must be True (it asks for a '
                               'lease described by lease_params)')
        if raw is None:
            raise InvalidParam('lease_params', 'is required with '
                               'reserved=True')
    if raw is None:
        return None
    # Given as an object, it is held to the length of its text as well.
    text = raw if isinstance(raw, str) else json.dumps(raw,
                                                       ensure_ascii=False)
    if len(text) > MAX_PARAMS_LENGTH:
        raise InvalidParam('lease_params', 'is longer than %d characters'
                           % MAX_PARAMS_LENGTH)
    params = validation.load_json('lease_params', raw) \
        if isinstance(raw, str) else raw
    if not isinstance(params, dict):
        raise InvalidParam('lease_params', 'must be a JSON object with '
                           'name, start and end')
    validation.check(schemas.LEASE_PARAMS, params, 'lease_params')
    immediate = params['start'] == 'now'
    start, end = validation.interval(
        'lease_params.start', params['start'], 'lease_params.end',
        params['end'], now, max_duration, max_advance)
    before_end = params.get('before_end')
    if before_end is not None:
        before_end = int(before_end)
        if before_end * 60 >= (end - start).total_seconds():
            raise InvalidParam('lease_params.before_end', 'must be shorter '
                               'than the lease')
    return LeaseRequest(name=validation.lease_name(params['name']),
                        start=start, end=end,
                        on_end=params.get('on_end', 'delete'),
                        before_end=before_end, immediate=immediate,
                        client_token=params.get('client_token'),
                        max_extensions=validation.max_extensions(
                            'lease_params.', params),
                        waiting=validation.waiting(
                            'lease_params.', params, start, immediate, now,
                            max_advance),
                        occurrences=tuple(validation.occurrences(
                            'lease_params.', params, start, end, now,
                            max_advance)) if 'recurrence' in params
                        else None)


@dataclasses.dataclass(frozen=True)
class PreemptibleRequest:
    on_preempt: str = 'shelve'


def _true_or_false(field: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ('true', 'false'):
        return value.lower() == 'true'
    raise InvalidParam(field, 'must be true or false')


def preemptible_request(hints: dict, extra_specs: dict
                        ) -> Optional[PreemptibleRequest]:
    """The preemptible boot asked for by the ``preemptible`` hint or the
    flavor's extra spec (the hint wins), or None for an ordinary boot.
    """
    hint = single_hint(hints, 'preemptible')
    on_preempt = single_hint(hints, 'on_preempt')
    leased = [k for k in ('lease_params', 'reserved', 'reservation')
              if k in hints]
    if hint is not None:
        wanted = _true_or_false('preemptible', hint)
    else:
        # A lease's boot of a preemptible flavor runs under the lease.
        spec = (extra_specs or {}).get(marks.PREEMPTIBLE)
        wanted = spec is not None and not leased and _true_or_false(
            'flavor extra spec %s' % marks.PREEMPTIBLE, spec)
    if on_preempt is not None:
        if not isinstance(on_preempt, str) or \
                on_preempt not in marks.ON_PREEMPT_ACTIONS:
            raise InvalidParam('on_preempt', 'must be one of %s'
                               % ', '.join(marks.ON_PREEMPT_ACTIONS))
        if not wanted:
            raise InvalidParam('on_preempt', 'is for a preemptible boot '
                               '(preemptible=true)')
    if not wanted:
        return None
    if leased:
        raise InvalidParam('preemptible', 'can not be given with %s: a '
                           'preemptible server belongs to no lease'
                           % leased[0])
    return PreemptibleRequest(on_preempt=on_preempt or 'shelve')


def default_lease(server_name, now: datetime.datetime, duration: int,
                  on_end: str, before_end: int) -> LeaseRequest:
    """The lease of an ordinary boot in a project whose boots are leases
    (``[reservation] default_lease_projects``): from now, for `duration`
    seconds, told `before_end` minutes before its end (0: not told).
    """
    name = server_name if isinstance(server_name, str) else ''
    end = now + datetime.timedelta(seconds=duration)
    return LeaseRequest(
        name=validation.lease_name(('default: %s' % name)[:255].strip()),
        start=now, end=end, on_end=on_end,
        before_end=before_end if 0 < before_end * 60 < duration else None,
        immediate=True)


def check_metadata(server: dict) -> None:
    """The ``reservation:`` metadata keys are the service's to set."""
    metadata = server.get('metadata')
    if isinstance(metadata, dict):
        for key in metadata:
            if isinstance(key, str) and key.startswith(marks.PREFIX):
                raise InvalidParam('metadata.%s' % key[:64], 'is set by the '
                                   'reservation service, not in a boot')


def forced_host(server: dict) -> Optional[tuple]:
    """(host, node) that ``availability_zone: "zone:host[:node]"`` forces,
    either maybe None, or None if it forces nothing (a forced destination
    skips the scheduler's filters).
    """
    zone = server.get('availability_zone')
    if not isinstance(zone, str) or ':' not in zone:
        return None
    parts = zone.split(':')
    host = parts[1] or None
    node = parts[2] if len(parts) > 2 and parts[2] else None
    return (host, node) if host or node else None


def flavor(flavor_ref, found):
    """The boot's flavor (`found`: as `flavors.of_ref` found it), or
    InvalidParam naming flavorRef.
    """
    flavor_id = flavors.id_of_ref(flavor_ref)
    if flavor_id is None:
        raise InvalidParam('flavorRef', 'is required')
    if found is None:
        raise InvalidParam('flavorRef', 'flavor %s not found' % flavor_id)
    return found


def need(server: dict, found) -> capacity.Need:
    """What a server of the boot takes and the traits of its node, as Nova
    asks Placement for them (`found`: its flavor, as `flavor` takes it),
    or InvalidParam naming flavorRef and what a lease's slot cannot hold.
    """
    return _of_flavor(server, found, flavors.need)


def extras(server: dict, found) -> tuple:
    """What a server of the boot asks for of the classes a slot holds
    beyond vCPU, RAM and disk (`capacity.extras`); none for a flavor
    whose servers no slot can hold.
    """
    try:
        return need(server, found).extras
    except InvalidParam:
        return capacity.NO_EXTRAS


def counted_need(server: dict, found) -> capacity.Resources:
    """What a server of the boot takes of the classes the ledger counts
    (an ordinary boot may ask for more), or InvalidParam naming flavorRef
    if Nova refuses its flavor without an image.
    """
    return _of_flavor(server, found, flavors.counted)


def _of_flavor(server: dict, found, of):
    chosen = flavor(server.get('flavorRef'), found)
    try:
        return of(chosen, volume_backed(server))
    except exception.Uncounted as e:
        raise InvalidParam('flavorRef', 'flavor %s %s'
                           % (chosen.flavorid, e))


def volume_backed(server: dict) -> bool:
    """Whether the boot's root disk is a volume (its block device of boot
    index 0 has a volume as its destination), as Nova tells it.
    """
    for bdm in server.get('block_device_mapping_v2') or []:
        if isinstance(bdm, dict) and str(bdm.get('boot_index')) == '0':
            return bdm.get('destination_type') == 'volume'
    return False


def server_count(body: dict, limit: int) -> int:
    """How many servers the boot makes (Nova's max_count, else min)."""
    counts = {}
    for field in ('min_count', 'max_count'):
        value = body.get(field, counts.get('min_count', 1))
        try:
            if isinstance(value, bool) or isinstance(value, float):
                raise ValueError()
            counts[field] = int(value)
        except (TypeError, ValueError):
            raise InvalidParam(field, 'must be a positive integer')
        if counts[field] < 1:
            raise InvalidParam(field, 'must be a positive integer')
        if counts[field] > limit:
            raise InvalidParam(field, 'a lease holds at most %d servers'
                               % limit)
    if counts['min_count'] > counts['max_count']:
        raise InvalidParam('min_count', 'must not be above max_count')
    return counts['max_count']
