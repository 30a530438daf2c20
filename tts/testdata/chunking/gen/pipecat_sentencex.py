"""Runs Pipecat's own sentence aggregation, as released in pipecat-ai 1.14.0
with sentencex 1.0.32 (installed from pipeline/monitor/pipecat/requirements.lock
into pipeline/monitor/pipecat/.venv), over the chunking fixtures streamed token
by token, and writes what it releases and what it asked sentencex.

Usage, from the repository root:

    pipeline/monitor/pipecat/.venv/bin/python tts/testdata/chunking/gen/pipecat_sentencex.py

It writes, under tts/testdata/chunking/expect/:

- pipecat.jsonl: per reply of replies.jsonl, the chunks SimpleTextAggregator
  (pipecat/utils/text/simple_text_aggregator.py, SENTENCE mode, language
  unset, which is English) releases, with the index of the token whose
  characters released each (-1: flush at the end of the turn);
- pipecat-more.jsonl: the same for more-replies.jsonl;
- sentencex.jsonl: every text match_endofsentence (pipecat/utils/string.py)
  handed to sentencex.segment("en", ...) on both corpora, and each reply's
  text whole, with the pieces sentencex returned;
- pipecat-match.jsonl: every text SimpleTextAggregator asked
  match_endofsentence about on both corpora, and the random texts below
  with ". The" added to each, with its answer (in characters);
- sentencex-random.jsonl: 1,500 texts strung together at random (seeded)
  from pieces that reach sentencex's rarer rules (quotation marks of every
  kind, apostrophes, backticks, parentheses, lists, abbreviations, other
  scripts' punctuation, odd white space), with the pieces sentencex returned
  or the panic it raised.

With --texts FILE (JSON lines with a "text" field) it writes instead, to
stdout, sentencex's pieces of each text (or the panic it raised), for
checking the Go port on texts kept out of the repository (see
cmd/underrun/docs/synthesis.md).

Nothing of Pipecat's or sentencex's is copied into this repository: the
installed packages are imported and run.
"""

import argparse
import asyncio
import json
import os
import random
import sys
from importlib.metadata import version

import sentencex
import pipecat.utils.string as pstring
from pipecat.utils.text.simple_text_aggregator import SimpleTextAggregator

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from generate import run_pipecat_current  # noqa: E402 (streams tokens through an aggregator, records releases)
FIXTURES = os.path.join(HERE, "..")

CALLS = {}


MATCHES = {}


def record_match():
    """Keeps each text the aggregator hands match_endofsentence, with the
    answer (the aggregator module imported the function by name)."""
    import pipecat.utils.text.simple_text_aggregator as sta

    real = sta.match_endofsentence

    def recorded(text, *, language=None):
        out = real(text, language=language)
        MATCHES[text] = out
        return out

    sta.match_endofsentence = recorded


def record_segment():
    """Keeps each text Pipecat's sentence tokenizer hands sentencex, with
    the pieces sentencex returns (the module looks segment up at each call)."""
    real = pstring.segment

    def recorded(language, text):
        out = real(language, text)
        CALLS[text] = list(out)
        return out

    pstring.segment = recorded


# pieces for the random texts: each reaches a rule of sentencex's
ATOMS = (
    ["'", "'", "`", "``", "''", '"', "“", "”", "‘", "’", "«", "»", "‹", "›", "„", "‟", "‛", "‚", "《", "》", "「", "」"]
    + ["(", ")", "（", "）", "[", "]", "{", "}", "<", ">", "\\", "[2]", "[12]", "-", "+", "*", "•", "◦", "–", "—"]
    + [".", ".", ".", "..", "...", "…", "!", "?", "! ?", ". . .", "!.", "?!", ";", ",", ":", "。", "｡", "！", "？", "।", "؟", "։", "።"]
    + ["Dr", "Mr", "etc", "e.g", "p.m", "a.m", "U.S", "Ph.D", "No", "St", "vs", "in", "ft", "gal", "B.C", "A.D", "NE", "MBA", "J", "I", "X"]
    + ["1.", "2)", "a)", "(b)", "ii.", "iv", "7", "12", "2024", "7.Bg5", "x@y.co", "a.b@c.org"]
    + ["The", "So", "She", "Yes", "Then", "However", "Don't", "it", "and", "hello", "Tom", "Yahoo", "Yum", "In", "at", "the", "evening", "on", "Jan"]
    + ["don't", "I'm", "O'Brien", "'n'", "我", "好", "Σ", "É", "é", "ñ", "ǃ", "İ", "ſ", "K"]
    + ["\n", "\n", "\n\n", "\r", "\t", " ", " ", " ", " ", "\u00a0", "\u3000"]
)


def random_texts(n, seed=48):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 24)
        out.append("".join(rng.choice(ATOMS) + rng.choice(["", " ", " ", "\n"]) for _ in range(k)))
    return out


def segment_or_panic(text):
    try:
        return {"text": text, "pieces": list(sentencex.segment("en", text))}
    except BaseException as e:  # the library's Rust panics arrive as pyo3's PanicException
        return {"text": text, "panic": str(e)}


def load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return [json.loads(line) for line in f]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", help="JSON lines with a text field: print sentencex's pieces of each")
    args = ap.parse_args()
    if args.texts:
        with open(args.texts) as f:
            for line in f:
                print(json.dumps(segment_or_panic(json.loads(line)["text"]), ensure_ascii=False))
        return

    assert version("pipecat-ai") == "1.14.0" and version("sentencex") == "1.0.32", (version("pipecat-ai"), version("sentencex"))
    record_segment()
    record_match()
    texts = []
    for corpus, expect in (("replies.jsonl", "pipecat.jsonl"), ("more-replies.jsonl", "pipecat-more.jsonl")):
        replies = load(corpus)
        with open(os.path.join(FIXTURES, "expect", expect), "w") as f:
            for r in replies:
                if "".join(r["tokens"]) != r["text"]:
                    raise SystemExit(f"{corpus}: {r['id']}: tokens do not join to the text (go test ./tts -run TestChunkingPresets -update)")
                f.write(json.dumps({"id": r["id"], "chunks": asyncio.run(run_pipecat_current(SimpleTextAggregator, r["tokens"]))}, ensure_ascii=False) + "\n")
                texts.append(r["text"])
    for t in texts:
        CALLS[t] = list(sentencex.segment("en", t))
    with open(os.path.join(FIXTURES, "expect", "sentencex.jsonl"), "w") as f:
        for t in sorted(CALLS):
            f.write(json.dumps({"text": t, "pieces": CALLS[t]}, ensure_ascii=False) + "\n")
    print(f"pipecat-ai {version('pipecat-ai')}, sentencex {version('sentencex')}: {len(CALLS)} texts for sentencex.jsonl", file=sys.stderr)
    randoms = random_texts(1500)
    for t in randoms:
        t += ". The"
        try:
            MATCHES[t] = pstring.match_endofsentence(t)
        except BaseException:  # a panic of sentencex's
            pass
    with open(os.path.join(FIXTURES, "expect", "pipecat-match.jsonl"), "w") as f:
        for t in sorted(MATCHES):
            f.write(json.dumps({"text": t, "end": MATCHES[t]}, ensure_ascii=False) + "\n")
    with open(os.path.join(FIXTURES, "expect", "sentencex-random.jsonl"), "w") as f:
        for t in randoms:
            f.write(json.dumps(segment_or_panic(t), ensure_ascii=False) + "\n")
    print(f"{len(MATCHES)} texts for pipecat-match.jsonl (sentencex panics above, if any, are on random texts, left out)", file=sys.stderr)


if __name__ == "__main__":
    main()
