"""One module per resource of the lease API."""
