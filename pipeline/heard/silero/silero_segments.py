"""Silero VAD's speech segments of WAV files, for heard's evaluation.

Reads one JSON object on standard input:

    {"files": ["a.wav", ...], "params": {"threshold": 0.5, ...}}

where each file is 16 kHz mono 16-bit PCM WAV and params are keyword
arguments of silero_vad's get_speech_timestamps (its defaults where left
out). Writes one JSON line per file on standard output:

    {"file": "a.wav", "speech": [[start, end], ...]}

with each speech segment's first and last sample (end excluded), then a last
line {"silero_vad": VERSION, "onnxruntime": VERSION}.

The segments are silero_vad's own: its sequence model (the package's
silero_vad_16k_sequence.onnx, per-frame probabilities the package documents
as bit-exact with its streaming model's) run by its SileroVADSequence, and
its get_speech_timestamps_sequence, which applies get_speech_timestamps'
rules. That path needs numpy and onnxruntime only; the package's import
still touches torch (decorators, annotations, set_num_threads) without
calling it, so where torch is not installed (PyPI's is gigabytes with CUDA)
a stand-in module takes its place for the import.
"""

import importlib.metadata
import json
import sys
import types
import wave

import numpy as np


def _stand_in_for_torch():
    """Install a torch module with the names silero_vad's import touches."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    stub = types.ModuleType("torch")
    stub.Tensor = type("Tensor", (), {})
    stub.no_grad = lambda: (lambda f: f)
    stub.device = lambda *args, **kwargs: None
    stub.set_num_threads = lambda n: None
    sys.modules["torch"] = stub


def read_wav(name):
    """Return a 16 kHz mono 16-bit PCM WAV file's samples in [-1, 1]."""
    with wave.open(name, "rb") as w:
        if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(
                f"{name}: {w.getframerate()} Hz, {w.getnchannels()} channels, "
                f"{8 * w.getsampwidth()} bits: want 16000 Hz mono 16-bit"
            )
        frames = w.readframes(w.getnframes())
    return np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0


def main():
    request = json.load(sys.stdin)
    _stand_in_for_torch()
    from importlib import resources

    from silero_vad.sequence_vad import SileroVADSequence, get_speech_timestamps_sequence

    path = resources.files("silero_vad.data").joinpath("silero_vad_16k_sequence.onnx")
    model = SileroVADSequence(str(path), sampling_rate=16000)
    params = request.get("params", {})
    for name in request["files"]:
        audio = read_wav(name)
        segments = get_speech_timestamps_sequence(audio, model, sampling_rate=16000, **params)
        speech = [[int(s["start"]), int(s["end"])] for s in segments]
        print(json.dumps({"file": name, "speech": speech}), flush=True)
    print(
        json.dumps(
            {
                "silero_vad": importlib.metadata.version("silero-vad"),
                "onnxruntime": importlib.metadata.version("onnxruntime"),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
