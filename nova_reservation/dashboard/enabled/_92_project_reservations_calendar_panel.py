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

# Project > Reservations > Calendar: after blazar-dashboard's enabled files
# (_90_ and _91_), whose panel group it joins.
PANEL = 'calendar'
PANEL_GROUP = 'reservations'
PANEL_DASHBOARD = 'project'

ADD_PANEL = 'nova_reservation.dashboard.project_calendar.panel.Calendar'

# The templates, found by Django's app_directories loader.
ADD_INSTALLED_APPS = ['nova_reservation.dashboard']
