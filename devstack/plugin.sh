#!/bin/bash
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

#
# devstack plugin of nova-reservation (see devstack/README.md).
#
# devstack sources this file with $1 = stack, unstack or clean and, for
# stack, $2 = the phase.  Settings come from devstack/settings.
#
# Everything happens on the node that runs nova-api (devstack's controller,
# where nova-api, nova-scheduler and the engine share $NOVA_CONF); compute
# nodes ($NOVA_CPU_CONF) need nothing.

# Save trace setting
_XTRACE_NOVA_RESERVATION=$(set +o | grep xtrace)
set -o xtrace


# install_nova_reservation() - Install the package (and the lease CLI)
function install_nova_reservation {
    setup_develop "$NOVA_RESERVATION_DIR"
    if [[ "$NOVA_RESERVATION_INSTALL_CLIENT" == "True" ]]; then
        pip_install python-blazarclient
    fi
}

# configure_nova_reservation() - Plug nova-reservation into nova.conf and
# api-paste.ini with the project's own `deploy configure` (idempotent): the
# scheduler filter, the engine's credentials, the boot hook and the lease API
function configure_nova_reservation {
    "$NOVA_RESERVATION_BIN_DIR/nova-reservation-manage" deploy configure \
        --nova-conf "$NOVA_CONF" --api-paste "$NOVA_API_PASTE_INI" \
        --auth-url "$KEYSTONE_SERVICE_URI/v3" \
        --username "$NOVA_RESERVATION_USER" \
        --password "$SERVICE_PASSWORD" \
        --project-name "$SERVICE_PROJECT_NAME" \
        --user-domain-name "$SERVICE_DOMAIN_NAME" \
        --project-domain-name "$SERVICE_DOMAIN_NAME" \
        --region-name "$REGION_NAME"
    if [[ "$NOVA_RESERVATION_FREEPOOL" != "freepool" ]]; then
        iniset "$NOVA_CONF" reservation freepool_name \
            "$NOVA_RESERVATION_FREEPOOL"
    fi
}

# nova_reservation_endpoint() - URL of the lease API, served by nova-api
function nova_reservation_endpoint {
    if [[ "${NOVA_USE_MOD_WSGI:-True}" == "False" ]]; then
        echo "$NOVA_SERVICE_PROTOCOL://$NOVA_SERVICE_HOST:$NOVA_SERVICE_PORT/reservation/v1"
    else
        echo "$NOVA_SERVICE_PROTOCOL://$NOVA_SERVICE_HOST/compute/reservation/v1"
    fi
}

# create_nova_reservation_accounts() - The engine's user (admin: unshelve
# onto a named host is admin-only) and the `reservation` catalog entry
function create_nova_reservation_accounts {
    local user
    user=$(get_or_create_user "$NOVA_RESERVATION_USER" \
        "$SERVICE_PASSWORD" "$SERVICE_DOMAIN_NAME")
    get_or_add_user_project_role admin "$user" "$SERVICE_PROJECT_NAME" \
        "$SERVICE_DOMAIN_NAME" "$SERVICE_DOMAIN_NAME"

    get_or_create_service nova-reservation reservation \
        "Leases of compute capacity (nova-reservation)"
    get_or_create_endpoint reservation "$REGION_NAME" \
        "$(nova_reservation_endpoint)"
}

# init_nova_reservation() - The rsv_* tables in Nova's API database, which
# init_nova has created and synced before the post-config phase
function init_nova_reservation {
    "$NOVA_RESERVATION_BIN_DIR/nova-reservation-manage" \
        --config-file "$NOVA_CONF" db sync
}

# create_nova_reservation_freepool() - The aggregate of reservable hosts
function create_nova_reservation_freepool {
    if ! openstack --os-cloud devstack-admin aggregate show \
            "$NOVA_RESERVATION_FREEPOOL" >/dev/null 2>&1; then
        openstack --os-cloud devstack-admin aggregate create \
            "$NOVA_RESERVATION_FREEPOOL"
    fi
}

function _nova_reservation_conf_digest {
    cat "$NOVA_CONF" "$NOVA_API_PASTE_INI" | md5sum
}

# reconfigure_nova_reservation() - local.conf's [[post-config|$NOVA_CONF]]
# is merged after this plugin's post-config phase and may replace
# enabled_filters: configure again, and restart nova-api and nova-scheduler
# (started since) if that changed their files
function reconfigure_nova_reservation {
    local before service
    before=$(_nova_reservation_conf_digest)
    configure_nova_reservation
    if [[ "$(_nova_reservation_conf_digest)" != "$before" ]]; then
        for service in n-api n-sch; do
            if is_service_enabled $service; then
                restart_service "devstack@$service.service"
            fi
        done
    fi
}

# start_nova_reservation() - The lease engine
function start_nova_reservation {
    run_process nova-rsv-engine \
        "$NOVA_RESERVATION_BIN_DIR/nova-reservation-engine --config-file $NOVA_CONF"
}

# stop_nova_reservation() - Stop the lease engine
function stop_nova_reservation {
    stop_process nova-rsv-engine
}


if [[ "$1" == "stack" && "$2" == "install" ]]; then
    if is_service_enabled n-api n-sch nova-rsv-engine; then
        echo_summary "Installing nova-reservation"
        install_nova_reservation
    fi

elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    # Before nova-api and nova-scheduler start: they read the new files.
    if is_service_enabled n-api; then
        echo_summary "Configuring nova-reservation"
        configure_nova_reservation
        create_nova_reservation_accounts
        init_nova_reservation
    fi

elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    if is_service_enabled n-api; then
        echo_summary "Creating the nova-reservation freepool"
        create_nova_reservation_freepool
        reconfigure_nova_reservation
    fi
    if is_service_enabled nova-rsv-engine; then
        echo_summary "Starting nova-reservation-engine"
        start_nova_reservation
    fi

elif [[ "$1" == "unstack" ]]; then
    stop_nova_reservation
fi

# "clean": nothing beyond unstack; the tables go with Nova's API database.

# Restore xtrace
$_XTRACE_NOVA_RESERVATION
