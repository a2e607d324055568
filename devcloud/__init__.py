"""Development clouds of nova-reservation, kept out of the installed
package: the embedded cloud, Nova in one process (``devcloud.embedded``);
the main job's scenario on it (``devcloud.demo``); the local
multi-process cloud (``devcloud.localcloud``); the machine's MariaDB and
RabbitMQ with engine processes (``devcloud.machine``); and stand-ins for
services (``devcloud.standins``).
"""
