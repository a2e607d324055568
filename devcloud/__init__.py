"""Development clouds of nova-reservation, kept out of the installed
package: the local multi-process cloud (``devcloud.localcloud``) and the
stand-ins it and the tests use (``devcloud.standins``).
"""
