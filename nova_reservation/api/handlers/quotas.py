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

"""/v1/quotas/{project_id}: a project's reservation quota and its use."""

from oslo_log import log as logging

from nova_reservation.api import wsgi
from nova_reservation.clients import keystone_projects
from nova_reservation.db import api as db_api
from nova_reservation.db import quotas as db_quotas
from nova_reservation.lease import quotas as lease_quotas
from nova_reservation import policies
from nova_reservation.schemas import quotas as schemas
from nova_reservation import validation

LOG = logging.getLogger(__name__)


def _project(project_id: str) -> str:
    return validation.check(schemas.PROJECT_ID, project_id,
                            whole='project_id')


def show_quota(ctx, req, project_id):
    project_id = _project(project_id)
    wsgi.authorize(ctx, policies.QUOTAS_GET, project_id)
    return wsgi.json_response(200, {'quota': lease_quotas.shown(
        ctx, project_id)})


def update_quota(ctx, req, project_id):
    project_id = _project(project_id)
    wsgi.authorize(ctx, policies.QUOTAS_UPDATE, project_id)
    body = wsgi.body_of(req)
    validation.check(schemas.UPDATE, body)
    keystone_projects.check(ctx, [('project_id', project_id)])
    db_quotas.set_overrides(db_api.Context(), project_id, body['quota'])
    LOG.info('Reservation quota of project %s set by %s: %s', project_id,
             ctx.user_id, body['quota'])
    return wsgi.json_response(200, {'quota': lease_quotas.shown(
        ctx, project_id)})
