"""The web console (issue 18): brokers, topics, messages, consumer groups, throughput.

Served by aiohttp either inside a broker (``kbroker.console.listener``, on the broker's own
loop) or by ``kbroker console --bootstrap-server host:port`` against any Kafka-compatible
cluster.  Either way it reads and writes only through the Kafka protocol
(kbroker/console/client.py): the console is a client, never a second path into a broker.
Pages are rendered on the server (kbroker/console/pages.py); the throughput chart is drawn
by our own script on a canvas (static/console.js).  Every asset is in static/: nothing loads
from the internet.
"""
