"""A local multi-process cloud with nova-reservation (``tools/localcloud``)."""
