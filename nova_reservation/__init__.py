"""nova-reservation: leases of compute capacity, inside Nova."""
