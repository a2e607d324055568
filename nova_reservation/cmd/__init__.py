"""Console scripts.

They run native threads: oslo.service's threading backend is chosen here,
before anything imports ``oslo_service.service`` (which binds a backend).
"""

from oslo_service import backend

if backend.get_backend_type() is None:
    backend.init_backend(backend.BackendType.THREADING)
