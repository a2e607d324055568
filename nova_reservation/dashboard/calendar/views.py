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

"""The calendar's pages: the ledger drawn (a project's or an admin's),
and the form that starts a lease from one of its free windows.
"""

import datetime
import logging
from urllib import parse

from blazar_dashboard.api import client as blazar_api
from django.urls import reverse
from django.urls import reverse_lazy
from django.utils.translation import gettext_lazy as _
from horizon import forms as horizon_forms
from horizon import messages
from horizon import views

from nova_reservation.dashboard.calendar import forms
from nova_reservation.dashboard.calendar import layout

LOG = logging.getLogger(__name__)
QUERY_DATE = '%Y-%m-%dT%H:%M:%S'
CREATE = 'horizon:project:calendar:create'


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def get_ledger(request, after: datetime.datetime,
               before: datetime.datetime) -> dict:
    """GET /v1/ledger over [after, before): the API decides by its policy
    whether the user sees every node or the project's own allocations.
    """
    client = blazar_api.blazarclient(request)
    if client is None:
        raise LookupError(_('No reservation service in the catalog.'))
    query = parse.urlencode({'after': after.strftime(QUERY_DATE),
                             'before': before.strftime(QUERY_DATE)})
    _resp, body = client.lease.request_manager.get('/ledger?' + query)
    return body['ledger']


def window_link(row: layout.FlavorRow, cell: layout.Cell) -> str:
    """The lease form, filled in for a free window."""
    return '%s?%s' % (reverse(CREATE), parse.urlencode({
        'flavor_id': row.flavor_id, 'flavor_name': row.flavor_name,
        'start': cell.start.strftime(QUERY_DATE),
        'end': cell.end.strftime(QUERY_DATE)}))


class CalendarView(views.HorizonTemplateView):
    template_name = 'reservation_calendar/calendar.html'
    page_title = _('Calendar')
    # The admin's calendar: every node the API shows, ordinary servers
    # included; a project's: its own allocations only.
    every_node = False

    def get_context_data(self, **kwargs) -> dict:
        context = super().get_context_data(**kwargs)
        period = forms.PeriodForm(self.request.GET or None)
        start, days = period.period()
        now = utcnow()
        # The API starts no calendar in the past.
        after = max(start, now) if start else now
        before = after + datetime.timedelta(days=days)
        if not period.is_bound:
            period = forms.PeriodForm(initial={'days': days})
        context.update(period_form=period, days=days,
                       every_node=self.every_node)
        try:
            ledger = get_ledger(self.request, after, before)
        except Exception as e:
            LOG.warning('Ledger unavailable: %s', e)
            messages.error(self.request, _('Unable to retrieve the ledger: '
                                           '%s') % forms.api_message(e))
            return context
        if not self.every_node:
            ledger = layout.own(ledger, self.request.user.project_id)
        drawn = layout.calendar(ledger)
        for row in drawn.free:
            for cell in row.cells:
                # A window too short to start in before it ends has none.
                if cell.count >= 1 and forms.start_of(cell.start, now) < (
                        cell.end.replace(second=0, microsecond=0)):
                    cell.link = window_link(row, cell)
        context['calendar'] = drawn
        return context


class CreateLeaseView(horizon_forms.ModalFormView):
    form_class = forms.CreateLeaseForm
    template_name = 'reservation_calendar/create.html'
    modal_id = 'calendar_lease_modal'
    form_id = 'calendar_lease_form'
    modal_header = _('Start a Lease')
    page_title = _('Start a Lease')
    submit_label = _('Create Lease')
    submit_url = reverse_lazy(CREATE)
    success_url = reverse_lazy('horizon:project:leases:index')
    cancel_url = reverse_lazy('horizon:project:calendar:index')

    def get_initial(self) -> dict:
        query = self.request.GET
        initial = {'amount': 1, 'flavor_id': query.get('flavor_id', ''),
                   'flavor_name': query.get('flavor_name', '')}
        try:
            start = layout.parse_date(query.get('start'))
            end = layout.parse_date(query.get('end'))
        except ValueError:
            start = end = None
        if start and end:
            start = forms.start_of(start, utcnow())
            end = end.replace(second=0, microsecond=0)
            initial.update(start=start, end=end, name='%s-%s' % (
                initial['flavor_name'] or 'lease',
                start.strftime('%Y%m%d-%H%M')))
        return initial
