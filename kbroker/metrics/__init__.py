"""metrics: the broker's hot-path counters.

Theory of operation: ``counters`` holds what request handling adds per request or per
batch (messages and bytes in and out per topic, request latencies per API, ISR shrinks and
expands): plain integers and lists updated on the event loop, never locked, read at scrape
time by app/'s ``metrics_collector``, which turns them into Prometheus families under
Kafka's metric names.  A leaf: it imports nothing of the broker.
"""
