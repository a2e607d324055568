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

"""A project's reservation quota: its limits, from the API's overrides,
its Keystone tags (``[reservation] quota_tag``) and the cloud's defaults
(``[reservation] quota_*``), and its use read from the ledger.
"""

from typing import Optional

from nova_reservation.capacity import epoch
from nova_reservation.clients import project_tags
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import quotas as db_quotas
from nova_reservation.lease import quotas

CONF = conf.CONF
# The kind of refusal of a lease that would pass a quota.
OVER_QUOTA = 'QuotaExceeded'


def defaults() -> dict:
    """{limit: most} of the cloud (``[reservation] quota_<limit>``, and
    ``quota_classes``: those of them that name a class's limit).
    """
    found = {name: most for name, most in
             CONF.reservation.quota_classes.items()
             if quotas.class_limit(name)}
    found.update({name: getattr(CONF.reservation, 'quota_' + name)
                  for name in quotas.LIMITS})
    return found


def limits(ctx, project_id: str) -> tuple:
    """({limit: most}, {limit: where it comes from}) of `project_id`
    (`quotas.limits_of`); the tags are read with `ctx`'s token, or the
    engine's credentials where `ctx` is None.
    """
    tagged = {}
    if CONF.reservation.quota_tag:
        tagged = quotas.tagged_limits(project_tags.tags(ctx, project_id),
                                      CONF.reservation.quota_tag)
    return quotas.limits_of(defaults(), tagged, db_quotas.overrides(
        db_api.Context(), project_id))


def of(ctx, project_id: str) -> Optional[quotas.Quota]:
    """The quota a ledger write of `project_id` is checked against, or
    None where none limits it.
    """
    found, _ = limits(ctx, project_id)
    quota = quotas.Quota(project_id, found)
    return quota if quota.enforced() else None


def shown(ctx, project_id: str) -> dict:
    """Each limit of `project_id` with its use now, as the API shows it."""
    found, source = limits(ctx, project_id)
    now = db_api.utcnow()
    use = db_quotas.usage(db_api.Context(), project_id, now)
    view = {'project_id': project_id}
    for name in quotas.AT_ANY_INSTANT:
        peak, when = use.peaks[name]
        view[name] = {'limit': found[name], 'source': source[name],
                      'in_use': peak,
                      'peak_at': when and epoch.when_text(when)}
    month = now.strftime('%Y-%m')
    view[quotas.PER_MONTH] = {
        'limit': found[quotas.PER_MONTH],
        'source': source[quotas.PER_MONTH],
        'in_use': round(use.month(month), 2), 'month': month,
        'months': {k: round(v, 2) for k, v in sorted(use.months.items())}}
    # Each class limited, or held.
    for name in sorted(set(found) - set(quotas.LIMITS) | {
            n for rc in use.class_months for n in (rc, rc + quotas.HOURS)
            if quotas.class_limit(n)}):
        rc, per_month = quotas.class_limit(name)
        view[name] = {'limit': found.get(name, quotas.UNLIMITED),
                      'source': source.get(name, 'default')}
        if per_month:
            months = use.class_months.get(rc, {})
            view[name].update(
                in_use=round(months.get(month, 0.0), 2), month=month,
                months={k: round(v, 2) for k, v in sorted(months.items())})
        else:
            peak, when = use.peaks.get(rc, (0, None))
            view[name].update(in_use=peak,
                              peak_at=when and epoch.when_text(when))
    return view
