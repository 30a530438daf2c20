"""Reports a Pipecat voice pipeline to ``underrun monitor``: the LLM's text as
it streams, the sentences its TTS is given, the audio its output transport
sends and its function calls, turn by Pipecat turn, so that the monitor hears
every gap inside a reply and names the token delay behind it.

Written and tested against pipecat-ai 1.14.0 (cmd/underrun/docs/pipecat.md).
"""

from underrun_monitor import MonitorClient, MonitorError
from .observer import HeardGap, UnderrunObserver

__all__ = ["HeardGap", "MonitorClient", "MonitorError", "UnderrunObserver"]
