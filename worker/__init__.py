"""The queue worker: project streams in, span store rows out (`spangate worker`).

`loop.py` is the consumer loop (reading, writer threads, acknowledging); `steps.py` its
steps that touch neither Redis nor the database; `record.py` the ingestion record's part
written with each batch; `metrics.py` the worker's Prometheus metrics.
"""
