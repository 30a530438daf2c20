"""One ingest connection to ``underrun monitor`` for Python voice frameworks'
adapters (pipeline/monitor/pipecat, pipeline/monitor/livekit-agents-py): it
never blocks or breaks the app that uses it (cmd/underrun/docs/monitor.md,
the protocol)."""

from .client import MonitorClient, MonitorError, ingest_url

__all__ = ["MonitorClient", "MonitorError", "ingest_url"]
