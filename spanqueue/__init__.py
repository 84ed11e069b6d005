"""The queue between the collector and the worker: Redis Streams, one per project.

A collector answers 200 only once Redis has confirmed the entry of a request
(`producer`); a worker acknowledges an entry only once the database has committed its
spans (`consumer`). Between the two, an entry is an acknowledged span that nothing may
lose: entries are never trimmed, and a worker that dies leaves its entries pending for
another one to take over. `layout` names the keys and the entry's fields both sides use.
"""
