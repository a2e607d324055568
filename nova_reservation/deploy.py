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

"""How nova-reservation plugs into Nova: the exact configuration lines.

The test harness, the demo and the deployment tools all take the
configuration from here, so that what is tested is what operators get.
"""

import re
from typing import Optional

PASTE_FILTER_NAME = 'reservation'
PASTE_SECTIONS = """
[filter:reservation]
paste.filter_factory = nova_reservation.hooks:filter_factory

[pipeline:reservation_api]
pipeline = cors http_proxy_to_wsgi compute_req_id request_log authtoken \
keystonecontext reservation_app

[app:reservation_app]
paste.app_factory = nova_reservation.api:app_factory
"""
API_MOUNT = '/reservation: reservation_api'

FILTER_CLASS = 'nova_reservation.filters.ReservationFilter'
FILTER_NAME = 'ReservationFilter'


def add_to_api_paste(text: str) -> str:
    """Change a shipped api-paste.ini as an operator does.

    The boot-hint hook goes right after ``keystonecontext`` in every /v2.1
    pipeline, and the lease API is mounted at /reservation in the
    osapi_compute urlmap, behind the same authentication as Nova.  The
    ``noauth2`` pipelines that Nova ships up to 2025.1 (``[api]
    auth_strategy = noauth2``, for tests) get the hook right after
    ``noauth2``, which makes the request context there; the lease API
    takes Keystone tokens only.
    """
    if '[filter:reservation]' in text:
        return text
    text = re.sub(r'(\bkeystonecontext|(?<= )noauth2)(?= )',
                  r'\1 %s' % PASTE_FILTER_NAME, text)
    text = mount(text, [API_MOUNT])
    return text.rstrip('\n') + '\n' + PASTE_SECTIONS


def mount(text: str, entries: list) -> str:
    """An api-paste.ini with `entries` (``path: app``) first in the
    osapi_compute urlmap.
    """
    return re.sub(r'(\[composite:osapi_compute\]\nuse = [^\n]*\n)',
                  lambda m: m.group(1) + ''.join(e + '\n' for e in entries),
                  text)


def scheduler_filters(enabled: list) -> list:
    """Nova's enabled filters with ReservationFilter added last."""
    return list(enabled) + ([FILTER_NAME] if FILTER_NAME not in enabled
                            else [])


_HEADER = re.compile(r'^\s*\[([^\]]+)\]\s*$')


def _section(lines: list, section: str) -> tuple:
    """(first, end) line indexes of a section's body; (None, None) when it
    is not there.
    """
    first = None
    for i, line in enumerate(lines):
        match = _HEADER.match(line)
        if match and first is not None:
            return first, i
        if match and match.group(1) == section:
            first = i + 1
    return (first, len(lines)) if first is not None else (None, None)


def _option_lines(lines: list, first: int, end: int, name: str) -> list:
    pattern = re.compile(r'^%s\s*=' % re.escape(name))
    return [i for i in range(first, end) if pattern.match(lines[i])]


def get_ini(text: str, section: str, name: str) -> list:
    """Every value of an option of an ini text (several for a multi-valued
    option), in order.
    """
    lines = text.splitlines()
    first, end = _section(lines, section)
    if first is None:
        return []
    return [lines[i].split('=', 1)[1].strip()
            for i in _option_lines(lines, first, end, name)]


def set_ini(text: str, section: str, name: str, value: str,
            multi: bool = False) -> str:
    """Set an option of an ini text, as an operator edits the file: the
    rest of the text stays as it is.  `multi` adds one more value to a
    multi-valued option (if not there yet) instead of replacing it.
    """
    lines = text.splitlines()
    first, end = _section(lines, section)
    new = '%s = %s' % (name, value)
    if first is None:
        lines += ['', '[%s]' % section, new]
        return '\n'.join(lines) + '\n'
    found = _option_lines(lines, first, end, name)
    if multi:
        if value in get_ini(text, section, name):
            return text
        at = found[-1] + 1 if found else end
    elif found:
        lines[found[0]] = new
        for i in reversed(found[1:]):
            del lines[i]
        return '\n'.join(lines) + '\n'
    else:
        at = end
    # After the section's last option, before the blank lines that end it.
    while not found and at > first and not lines[at - 1].strip():
        at -= 1
    lines.insert(at, new)
    return '\n'.join(lines) + '\n'


def add_to_nova_conf(text: str, auth: Optional[dict] = None) -> str:
    """Change nova.conf as an operator does: the scheduler filter, and
    `auth` (keystoneauth password options: auth_url, username, password,
    project_name, ...) for the engine in [reservation].
    """
    from nova.conf import scheduler   # Nova's defaults, where unset

    def default(name):
        return next(o.default for o in scheduler.filter_scheduler_opts
                    if o.name == name)
    if not get_ini(text, 'filter_scheduler', 'available_filters'):
        for path in default('available_filters'):
            text = set_ini(text, 'filter_scheduler', 'available_filters',
                           path, multi=True)
    text = set_ini(text, 'filter_scheduler', 'available_filters',
                   FILTER_CLASS, multi=True)
    enabled = get_ini(text, 'filter_scheduler', 'enabled_filters')
    enabled = (enabled[-1].split(',') if enabled
               else default('enabled_filters'))
    text = set_ini(text, 'filter_scheduler', 'enabled_filters', ','.join(
        scheduler_filters([f.strip() for f in enabled if f.strip()])))
    options = dict(auth_type='password', user_domain_name='Default',
                   project_domain_name='Default')
    options.update(auth or {})
    if auth:
        for name, value in options.items():
            text = set_ini(text, 'reservation', name, value)
    return text


def configure(nova_conf: str, api_paste: str,
              auth: Optional[dict] = None) -> None:
    """Edit the files of a Nova deployment in place (idempotent)."""
    for path, change in ((nova_conf, lambda t: add_to_nova_conf(t, auth)),
                         (api_paste, add_to_api_paste)):
        with open(path) as f:
            text = f.read()
        new = change(text)
        if new != text:
            with open(path, 'w') as f:
                f.write(new)
