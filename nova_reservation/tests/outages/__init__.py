# Nova decides between eventlet and native threads on this import, before
# anything else is imported (OS_NOVA_DISABLE_EVENTLET_PATCHING=1: threads).
import nova.tests.functional  # noqa: F401
