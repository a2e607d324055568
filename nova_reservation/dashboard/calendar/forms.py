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

"""The calendar's forms: its period, and a lease started from a free
window.  Dates are UTC, as the calendar draws them.
"""

import datetime
import logging
import re

from blazar_dashboard.api import client as blazar_api
from blazarclient import exception as blazar_exception
from django import forms as django_forms
from django.utils.translation import gettext_lazy as _
from horizon import forms
from horizon import messages

LOG = logging.getLogger(__name__)
FORM_DATE = '%Y-%m-%d %H:%M'
# The lease API's dates are to the minute (its CLI's format).
API_DATE = '%Y-%m-%d %H:%M'
DEFAULT_DAYS, LONGEST_DAYS = 7, 31
# A field the lease API names in a 400 ("start_date: ..."), as the form's.
API_FIELDS = {'name': 'name', 'start_date': 'start', 'end_date': 'end',
              'amount': 'amount'}


class PeriodForm(django_forms.Form):
    """The calendar's period, from its GET query: from (UTC, blank for
    now) for a number of days.
    """
    start = django_forms.DateTimeField(
        label=_('From (UTC)'), required=False,
        input_formats=['%Y-%m-%dT%H:%M', FORM_DATE, '%Y-%m-%d'],
        widget=django_forms.DateTimeInput(
            attrs={'type': 'datetime-local', 'class': 'form-control'},
            format='%Y-%m-%dT%H:%M'))
    days = django_forms.IntegerField(
        label=_('Days'), required=False, min_value=1, max_value=LONGEST_DAYS,
        widget=django_forms.NumberInput(attrs={'class': 'form-control'}))

    def __init__(self, *args, **kwargs) -> None:
        # Ids of its own: the lease form opens over it, with a start too.
        kwargs.setdefault('auto_id', 'period_%s')
        super().__init__(*args, **kwargs)

    def period(self) -> tuple:
        """(after or None for now, days) the query asks for; defaults for
        what is invalid.
        """
        if not self.is_valid():
            return None, DEFAULT_DAYS
        start = self.cleaned_data.get('start')
        if start is not None:
            # Django made it aware in the user's zone; it was typed as UTC.
            start = start.replace(tzinfo=None)
        return start, self.cleaned_data.get('days') or DEFAULT_DAYS


def api_message(error: Exception) -> str:
    """The lease API's error message, without the client's prefix."""
    return re.sub(r'^ERROR: ', '', str(error))


class CreateLeaseForm(forms.SelfHandlingForm):
    name = forms.CharField(label=_('Lease Name'), max_length=80)
    flavor_id = forms.CharField(widget=forms.HiddenInput())
    flavor_name = forms.CharField(
        label=_('Flavor'), required=False,
        widget=forms.TextInput(attrs={'readonly': 'readonly'}))
    amount = forms.IntegerField(
        label=_('Number of Servers'), min_value=1, initial=1)
    start = forms.DateTimeField(
        label=_('Start (UTC)'), input_formats=[FORM_DATE],
        help_text=_('YYYY-MM-DD HH:MM'),
        widget=forms.DateTimeInput(format=FORM_DATE))
    end = forms.DateTimeField(
        label=_('End (UTC)'), input_formats=[FORM_DATE],
        help_text=_('YYYY-MM-DD HH:MM'),
        widget=forms.DateTimeInput(format=FORM_DATE))

    def clean(self) -> dict:
        data = super().clean()
        for field in ('start', 'end'):
            if data.get(field):
                # Django made it aware in the user's zone; typed as UTC.
                data[field] = data[field].replace(tzinfo=None)
        start, end = data.get('start'), data.get('end')
        if start and end and end <= start:
            self.add_error('end', _('The end must be after the start.'))
        return data

    def handle(self, request, data: dict):
        reservations = [{'resource_type': 'flavor:instance',
                         'flavor_id': data['flavor_id'],
                         'amount': data['amount']}]
        try:
            lease = blazar_api.lease_create(
                request, data['name'], data['start'].strftime(API_DATE),
                data['end'].strftime(API_DATE), reservations=reservations,
                events=[])
        except blazar_exception.BlazarClientException as e:
            # The API's reason (no capacity and the earliest start, a bad
            # field) on the form, which stays open to be corrected.
            message = api_message(e)
            LOG.info('Lease %s refused: %s', data['name'], message)
            field = API_FIELDS.get(message.split(':', 1)[0].strip())
            if field:
                self.add_error(field, message)
            else:
                self.api_error(message)
            return False
        messages.success(request, _('Lease %s was successfully created.')
                         % data['name'])
        return lease


def start_of(bucket_start: datetime.datetime,
             now: datetime.datetime) -> datetime.datetime:
    """A lease's start for a free window: the window's own, to the minute,
    at least a minute ahead: the API refuses a start that is past by the
    time the form is sent.
    """
    earliest = (now + datetime.timedelta(minutes=2)).replace(
        second=0, microsecond=0)
    start = bucket_start
    if start.second or start.microsecond:
        start = (start + datetime.timedelta(minutes=1)).replace(
            second=0, microsecond=0)
    return max(start, earliest)
