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

"""Dates as Blazar's CLI takes them (to the minute) for the starts and
ends a test waits for: the first whole minute some seconds away, rather
than `base.minutes(n)`, which lands anywhere from 60 n - 60 to 60 n
seconds away.
"""

import datetime


def soon(at_least: float) -> str:
    """The first whole minute at least `at_least` seconds from now."""
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
        seconds=at_least)
    whole = at.replace(second=0, microsecond=0)
    if whole < at:
        whole += datetime.timedelta(minutes=1)
    return whole.strftime('%Y-%m-%d %H:%M')


def plus(date: str, n: int) -> str:
    """The date `n` minutes after `date`."""
    return (datetime.datetime.strptime(date, '%Y-%m-%d %H:%M') +
            datetime.timedelta(minutes=n)).strftime('%Y-%m-%d %H:%M')
