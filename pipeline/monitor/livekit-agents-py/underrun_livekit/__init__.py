"""Reports a LiveKit Agents (Python) voice pipeline to ``underrun monitor``: the
LLM's chunks as they stream, the sentences its TTS is given, the audio its
player plays, tool calls and fillers, turn by LiveKit speech id, so that the
monitor hears every gap inside a reply and names the token delay behind it.

Written and tested against livekit-agents 1.8.9 and livekit-plugins-openai 1.8.9
(cmd/underrun/docs/livekit-python.md). Its connection to the monitor is the
shared one of pipeline/monitor/pyclient (underrun_monitor.MonitorClient).
"""

from .monitor import Heard, HeardGap, Monitor
from .player import PacedAudioOutput

__all__ = ["Heard", "HeardGap", "Monitor", "PacedAudioOutput"]
