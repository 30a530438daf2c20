"""Runs the frameworks' own Python code over replies.jsonl, streamed token by
token, and writes what each releases to ../expect/<preset>.jsonl.

Usage (see ../SOURCES.md for the versions, the commits and the set-up):

    /usr/bin/python3 generate.py --pipecat PIPECAT_GIT --livekit LIVEKIT_GIT \
        --punkt ENGLISH_JSON --blingfire NODE_PROJECT_DIR

Each framework's files are read from its git repository at the commit named
below, into a temporary package with stubs for the logging and utility
modules they import; nothing of theirs is copied into this repository.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import types

PIPECAT_CURRENT = "acead0507d7de44e216d24533964106ca1d1d044"  # main, 2026-08-21 (v1.7.0+771)
PIPECAT_0096 = "b78eb5de6b209bb664b3851e4918707f67d74611"  # tag v0.0.96
LIVEKIT_CURRENT = "da6af86ac640a3bc54585764e64321d7048c1c16"  # main, 2026-08-22 (livekit-agents 1.7.0+7)

HERE = os.path.dirname(os.path.abspath(__file__))


def git_files(repo, commit, paths, dest):
    for p, out in paths:
        data = subprocess.run(["git", "-C", repo, "show", f"{commit}:{p}"], check=True, capture_output=True).stdout
        full = os.path.join(dest, out)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)


def touch(dest, *names):
    for n in names:
        full = os.path.join(dest, n)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if not os.path.exists(full):
            open(full, "w").close()


def punkt_sent_tokenize(english_json):
    """NLTK's Punkt with the English punkt_tab parameters: neurosnap's
    english.json holds the same abbreviations, collocations and orthographic
    context as NLTK's punkt_tab; its sentence starters add "she", which
    punkt_tab lacks, so it is dropped here."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    d = json.load(open(english_json))
    params = PunktParameters()
    params.abbrev_types = set(d["AbbrevTypes"])
    params.collocations = set(tuple(k.split(",", 1)) for k in d["Collocations"])
    params.sent_starters = set(d["SentStarters"]) - {"she"}
    for w, v in d["OrthoContext"].items():
        params.ortho_context[w] = v
    tok = PunktSentenceTokenizer(params)

    def sent_tokenize(text, language="english"):
        return tok.tokenize(text)

    return sent_tokenize


PUNKT_CALLS = {}


def install_nltk_stub(sent_tokenize):
    """Pipecat's calls of NLTK's sent_tokenize go to the Punkt above; each
    text and its sentences are kept for ../expect/punkt.jsonl."""
    import nltk
    import nltk.data
    import nltk.tokenize

    def recorded(text, language="english"):
        out = sent_tokenize(text, language)
        PUNKT_CALLS[text] = out
        return out

    nltk.tokenize.sent_tokenize = recorded
    nltk.data.find = lambda *a, **k: True
    nltk.download = lambda *a, **k: True


def install_loguru_stub():
    m = types.ModuleType("loguru")

    class L:
        def __getattr__(self, name):
            return lambda *a, **k: None

    m.logger = L()
    sys.modules["loguru"] = m


def load_pipecat(repo, commit, tag):
    dest = tempfile.mkdtemp(prefix=f"pipecat-{tag}-")
    files = [
        "src/pipecat/utils/string.py",
        "src/pipecat/utils/text/base_text_aggregator.py",
        "src/pipecat/utils/text/simple_text_aggregator.py",
    ]
    git_files(repo, commit, [(f, f.replace("src/", f"{tag}/")) for f in files], dest)
    touch(dest, f"{tag}/pipecat/__init__.py", f"{tag}/pipecat/utils/__init__.py", f"{tag}/pipecat/utils/text/__init__.py")
    for k in [k for k in sys.modules if k == "pipecat" or k.startswith("pipecat.")]:
        del sys.modules[k]
    sys.path.insert(0, os.path.join(dest, tag))
    import pipecat.utils.text.simple_text_aggregator as sta

    sys.path.pop(0)
    return sta.SimpleTextAggregator


async def run_pipecat_current(cls, tokens):
    agg = cls()
    out = []
    for i, tok in enumerate(tokens):
        async for a in agg.aggregate(tok):
            if a.text.strip():
                out.append({"text": a.text, "trigger": i})
    rest = await agg.flush()
    if rest and rest.text.strip():
        out.append({"text": rest.text, "trigger": -1})
    return out


async def run_pipecat_0096(cls, tokens):
    agg = cls()
    out = []
    for i, tok in enumerate(tokens):
        a = await agg.aggregate(tok)
        if a and a.text.strip():
            out.append({"text": a.text, "trigger": i})
    # LLMFullResponseEndFrame: the TTS service speaks what the aggregator holds
    rest = agg.text
    rest = rest.text if hasattr(rest, "text") else rest
    if rest.strip():
        out.append({"text": rest.strip(), "trigger": -1})
    return out


class Blingfire:
    """livekit.blingfire's text_to_sentences_with_offsets, by BlingFire's
    own sentence model (through node), with each sentence's offsets found
    in the text as BlingFire keeps every non-space character."""

    def __init__(self, project):
        self.p = subprocess.Popen(["node", os.path.join(HERE, "blingfire.mjs")], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "BLINGFIRE_PROJECT": os.path.abspath(project)})

    def sentences(self, text):
        self.p.stdin.write(json.dumps(text) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def text_to_sentences_with_offsets(self, text):
        sents = self.sentences(text)
        offsets = []
        pos = 0
        for s in sents:
            chars = [c for c in s if not c.isspace()]
            if not chars:
                continue
            while text[pos].isspace():
                pos += 1
            start = pos
            k = 0
            while k < len(chars):
                if text[pos].isspace():
                    pos += 1
                    continue
                if text[pos] != chars[k]:
                    raise ValueError(f"blingfire changed the text at {pos}: {text!r} vs {s!r}")
                pos += 1
                k += 1
            offsets.append((start, pos))
        return "\n".join(sents), offsets


def load_livekit(repo, commit, bf):
    dest = tempfile.mkdtemp(prefix="livekit-")
    base = "livekit-agents/livekit/agents/tokenize/"
    names = ["_basic_hyphenator.py", "_basic_paragraph.py", "_basic_sent.py", "_basic_word.py", "basic.py", "blingfire.py", "token_stream.py", "tokenizer.py", "utils.py"]
    git_files(repo, commit, [(base + n, "livekit/agents/tokenize/" + n) for n in names], dest)
    touch(dest, "livekit/__init__.py", "livekit/agents/__init__.py")
    with open(os.path.join(dest, "livekit/agents/tokenize/__init__.py"), "w") as f:
        f.write("from . import basic, blingfire\n")
    # stubs for the two helpers token_stream imports, and for the compiled
    # livekit.blingfire binding
    os.makedirs(os.path.join(dest, "livekit/agents/utils"), exist_ok=True)
    with open(os.path.join(dest, "livekit/agents/utils/__init__.py"), "w") as f:
        f.write(
            "import itertools\n"
            "_n = itertools.count()\n"
            "def shortuuid(prefix=''):\n    return prefix + str(next(_n))\n"
            "class _Chan:\n"
            "    def __init__(self):\n        self.items = []\n        self.closed = False\n"
            "    def send_nowait(self, x):\n        self.items.append(x)\n"
            "    def close(self):\n        self.closed = True\n"
            "    def __class_getitem__(cls, item):\n        return cls\n"
            "class aio:\n    Chan = _Chan\n"
        )
    bfmod = types.ModuleType("livekit.blingfire")
    bfmod.text_to_sentences_with_offsets = bf.text_to_sentences_with_offsets
    sys.modules["livekit.blingfire"] = bfmod
    sys.path.insert(0, dest)
    import livekit

    livekit.blingfire = bfmod
    from livekit.agents.tokenize import basic, blingfire

    sys.path.pop(0)
    return basic, blingfire


def run_livekit_stream(stream, tokens):
    out = []
    seen = 0
    for i, tok in enumerate(tokens):
        stream.push_text(tok)
        for ev in stream._event_ch.items[seen:]:
            out.append({"text": ev.token, "trigger": i})
        seen = len(stream._event_ch.items)
    stream.end_input()
    for ev in stream._event_ch.items[seen:]:
        out.append({"text": ev.token, "trigger": -1})
    return out


def run_elevenlabs_schedule(basic, tokens, schedule=(120, 160, 250, 290)):
    """LiveKit's ElevenLabs plugin with a chunk_length_schedule: auto_mode is
    off, the client sends each word of tokenize.basic's word stream as
    "word " (flush only at the end); ElevenLabs generates once the text it
    holds reaches the next length in its schedule (its documented rule)."""
    stream = basic.WordTokenizer(ignore_punctuation=False).stream()
    out = []
    seen = 0
    held = ""
    k = 0

    def send(word, i):
        nonlocal held, k
        held += word + " "
        if len(held) >= schedule[min(k, len(schedule) - 1)]:
            out.append({"text": held.strip(), "trigger": i})
            held = ""
            k += 1

    for i, tok in enumerate(tokens):
        stream.push_text(tok)
        for ev in stream._event_ch.items[seen:]:
            send(ev.token, i)
        seen = len(stream._event_ch.items)
    stream.end_input()
    for ev in stream._event_ch.items[seen:]:
        send(ev.token, -1)
    if held.strip():
        out.append({"text": held.strip(), "trigger": -1})
    return out


def check_pipecat_tests(repo):
    """Pipecat's own tests of match_endofsentence and SimpleTextAggregator
    (tests/test_utils_string.py, tests/test_simple_text_aggregator.py) pass
    with the code as loaded here, NLTK stand-in included."""
    import unittest

    suite = unittest.TestSuite()
    for name in ("test_utils_string", "test_simple_text_aggregator"):
        src = subprocess.run(["git", "-C", repo, "show", f"{PIPECAT_CURRENT}:tests/{name}.py"], check=True, capture_output=True, text=True).stdout
        mod = types.ModuleType(name)
        exec(compile(src, name + ".py", "exec"), mod.__dict__)
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(mod))
    res = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(suite)
    if not res.wasSuccessful():
        raise SystemExit("Pipecat's own tests fail with this set-up")
    print(f"Pipecat's own tests pass with this set-up ({res.testsRun} tests)", file=sys.stderr)


def check_livekit_tests(repo, basic, blingfire):
    """LiveKit's own expectations (tests/test_tokenizer.py) hold for the
    code as loaded here, BlingFire stand-in included: batch and streamed in
    pieces of 1, 2 and 4 characters, as that test streams them."""
    import ast

    src = subprocess.run(["git", "-C", repo, "show", f"{LIVEKIT_CURRENT}:tests/test_tokenizer.py"], check=True, capture_output=True, text=True).stdout
    consts = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                consts[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    text = consts["TEXT"]
    for tok, want in ((basic.SentenceTokenizer(min_sentence_len=20), consts["EXPECTED_MIN_20"]), (blingfire.SentenceTokenizer(min_sentence_len=20), consts["EXPECTED_MIN_20_BLINGFIRE"])):
        got = tok.tokenize(text=text)
        assert got[: len(want)] == want, (got, want)
        pieces, rest, sizes = [], text, [1, 2, 4]
        while rest:
            n = sizes[len(pieces) % 3]
            pieces.append(rest[:n])
            rest = rest[n:]
        got = [c["text"] for c in run_livekit_stream(tok.stream(), pieces)]
        assert got[: len(want)] == want, (got, want)
    print("LiveKit's tokenizer tests pass with this set-up (basic and blingfire)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pipecat", required=True)
    ap.add_argument("--livekit", required=True)
    ap.add_argument("--punkt", required=True)
    ap.add_argument("--blingfire", required=True)
    args = ap.parse_args()

    replies = [json.loads(l) for l in open(os.path.join(HERE, "..", "replies.jsonl"))]
    install_loguru_stub()
    install_nltk_stub(punkt_sent_tokenize(args.punkt))
    current = load_pipecat(args.pipecat, PIPECAT_CURRENT, "current")
    check_pipecat_tests(args.pipecat)
    old = load_pipecat(args.pipecat, PIPECAT_0096, "v0096")
    bf = Blingfire(args.blingfire)
    lk_basic, lk_bf = load_livekit(args.livekit, LIVEKIT_CURRENT, bf)

    check_livekit_tests(args.livekit, lk_basic, lk_bf)

    presets = {
        "pipecat-1.11": lambda t: asyncio.run(run_pipecat_current(current, t)),
        "pipecat-0.0.96": lambda t: asyncio.run(run_pipecat_0096(old, t)),
        "livekit": lambda t: run_livekit_stream(lk_bf.SentenceTokenizer().stream(), t),
        "livekit-basic": lambda t: run_livekit_stream(lk_basic.SentenceTokenizer().stream(), t),
        "elevenlabs-schedule": lambda t: run_elevenlabs_schedule(lk_basic, t),
    }
    os.makedirs(os.path.join(HERE, "..", "expect"), exist_ok=True)
    for name, run in presets.items():
        with open(os.path.join(HERE, "..", "expect", name + ".jsonl"), "w") as f:
            for r in replies:
                f.write(json.dumps({"id": r["id"], "chunks": run(r["tokens"])}, ensure_ascii=False) + "\n")
    # every text Pipecat asked NLTK to split, with NLTK's sentences: the Go
    # Punkt is checked against these directly
    with open(os.path.join(HERE, "..", "expect", "punkt.jsonl"), "w") as f:
        for text in sorted(PUNKT_CALLS):
            f.write(json.dumps({"text": text, "sentences": PUNKT_CALLS[text]}, ensure_ascii=False) + "\n")
    # blingfire's own sentences of each reply, whole, for the rules in
    # tts/chunking_livekit.go
    with open(os.path.join(HERE, "..", "expect", "blingfire-sentences.jsonl"), "w") as f:
        for r in replies:
            f.write(json.dumps({"id": r["id"], "sentences": [s for s, _ in []] or bf.sentences(r["text"])}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
