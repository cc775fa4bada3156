"""Kafka's wire protocol (DESIGN section 19): frames, request headers, one table of APIs, record batches v2.

Decoding and encoding are kafka-python 3's (``kafka.protocol``, ``kafka.record``: classes generated from Kafka's own
message schemas; docs/decisions/048-kafka-wire-codec.md); this package frames, dispatches and maps errors. Its
handlers are stubs until the use cases take narrow collaborators (issue 43): every API but ApiVersions answers
UNSUPPORTED_VERSION.
"""
