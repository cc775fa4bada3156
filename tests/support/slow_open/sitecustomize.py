"""On PYTHONPATH of a broker under test: every ``BrokerRuntime.open`` takes HALFMQ_TEST_SLOW_OPEN seconds longer.

As a long replay of HALFMQ_TXN_STATE does (it is read from offset 0, and grows with every ack record), so a test can
show what a node does while its runtime opens for longer than its lease TTL. Python imports this module at startup.
"""

import os
import time

if os.environ.get("HALFMQ_TEST_SLOW_OPEN"):
    from halfmq.broker import runtime

    _open = runtime.BrokerRuntime.open.__func__  # type: ignore[attr-defined]

    def _slow_open(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(float(os.environ["HALFMQ_TEST_SLOW_OPEN"]))
        return _open(cls, *args, **kwargs)

    runtime.BrokerRuntime.open = classmethod(_slow_open)  # type: ignore[method-assign, assignment]
