// A LiveKit Agents voice pipeline without a LiveKit server: an AgentSession
// with openai.LLM and openai.TTS (pointed at any OpenAI-compatible servers,
// such as `underrun mock --tts`), its speech played by the adapter's paced
// player, everything reported to `underrun monitor`.
//
//   node example.mjs --llm http://127.0.0.1:8000/v1 --tts http://127.0.0.1:8000/v1 \
//     --monitor ws://127.0.0.1:8765 [--session NAME] [--turns N] [--out heard.json] \
//     [--tool NAME [--tool-ms MS] [--say TEXT [--say-ms MS]]]
//
// --tool gives the agent a function tool of that name, which runs for
// --tool-ms (default 500): a mock turn with a tool call calls it, and the
// adapter reports the call, its result and the silence between. --say makes
// the tool speak a filler phrase (Monitor.say, which calls session.say),
// --say-ms (default 0) after it starts, as an app covers the wait.
//
// --out writes, per turn, what the adapter's player heard. With --releases
// FILE it records instead what LiveKit's sentence tokenizer hands to the TTS
// (no player pacing, no monitor): per turn, each text and how many LLM
// chunks had arrived when it was handed over (the chunks are let through one
// at a time, each once the one before it has gone as far as it goes).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { initializeLogger, llm as lkllm, voice } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import { Monitor } from './index.js';

const { values: args } = parseArgs({
  options: {
    llm: { type: 'string', default: 'http://127.0.0.1:8000/v1' },
    tts: { type: 'string', default: 'http://127.0.0.1:8000/v1' },
    monitor: { type: 'string', default: 'ws://127.0.0.1:8765' },
    session: { type: 'string', default: 'livekit-agent' },
    turns: { type: 'string', default: '1' },
    out: { type: 'string' },
    releases: { type: 'string' },
    tool: { type: 'string' },
    'tool-ms': { type: 'string', default: '500' },
    say: { type: 'string' },
    'say-ms': { type: 'string', default: '0' },
  },
});
initializeLogger({ pretty: false, level: 'error' });

const llm = new openai.LLM({ baseURL: args.llm, apiKey: 'unused', model: 'mock' });
const tts = new openai.TTS({ baseURL: args.tts, apiKey: 'unused' });
const turns = Number(args.turns);

if (args.releases) {
  // LiveKit's own release points: the text the StreamAdapter's tokenizer
  // gives the TTS, against the LLM chunks that had arrived by then
  const replies = [];
  let current = null;
  const chat = llm.chat.bind(llm);
  llm.chat = (opts) => {
    const stream = chat(opts);
    current = { arrived: 0, ended: false, chunks: [] };
    replies.push(current);
    const turn = current;
    const next = stream.next.bind(stream);
    stream.next = async () => {
      // each chunk goes on once the one before it has gone as far as it
      // goes (event turns, not timing: the recording does not depend on
      // how busy the machine is)
      for (let k = 0; k < 3; k++) await new Promise((resolve) => setTimeout(resolve, 1));
      const r = await next();
      if (r.done) turn.ended = true;
      else if (r.value?.delta?.content) turn.arrived++;
      return r;
    };
    return stream;
  };
  const synthesize = tts.synthesize.bind(tts);
  tts.synthesize = (text, ...rest) => {
    current.chunks.push({ text, trigger: current.ended ? -1 : current.arrived - 1 });
    return synthesize(text, ...rest);
  };
  // the frames are taken as fast as they come: only the text matters here
  class Sink extends voice.AudioOutput {
    async captureFrame(frame) {
      await super.captureFrame(frame);
    }
    flush() {
      super.flush();
      setImmediate(() => this.onPlaybackFinished({ playbackPosition: 0, interrupted: false }));
    }
    clearBuffer() {}
  }
  // no text transforms: the tokenizer sees the LLM's text as it is
  const session = new voice.AgentSession({ llm, tts, turnDetection: 'manual', ttsTextTransforms: [] });
  session.output.audio = new Sink(24000);
  await session.start({ agent: new voice.Agent({ instructions: 'Answer.' }) });
  for (let i = 0; i < turns; i++) {
    await session.generateReply({ userInput: `reply ${i}` }).waitForPlayout();
  }
  await session.close();
  writeFileSync(args.releases, replies.map((r) => JSON.stringify({ chunks: r.chunks })).join('\n') + '\n');
  process.exit(0);
}

const monitor = new Monitor(args.monitor, { session: args.session });
await monitor.ready();
const heard = [];
monitor.onPlayout = (turn, h) => heard.push({ turn, ...h });
const session = new voice.AgentSession({
  llm: monitor.wrapLLM(llm),
  tts: monitor.wrapTTS(tts),
  turnDetection: 'manual',
});
monitor.attach(session);
session.output.audio = monitor.player({ sampleRate: tts.sampleRate });
const tools = {};
if (args.tool) {
  tools[args.tool] = lkllm.tool({
    description: 'Looks something up for the answer.',
    parameters: { type: 'object', properties: {} },
    execute: async () => {
      if (args.say) setTimeout(() => monitor.say(session, args.say), Number(args['say-ms']));
      await new Promise((resolve) => setTimeout(resolve, Number(args['tool-ms'])));
      return 'done';
    },
  });
}
await session.start({ agent: new voice.Agent({ instructions: 'You are a helpful voice assistant.', tools }) });
for (let i = 0; i < turns; i++) {
  await session.generateReply({ userInput: 'Where is the room?' }).waitForPlayout();
}
await session.close();
await monitor.close();
if (args.out) writeFileSync(args.out, JSON.stringify(heard, null, 1) + '\n');
for (const h of heard) {
  const gaps = h.gaps.map((g) => `${g.durationMs.toFixed(1)} ms at ${g.startMs.toFixed(1)} ms`).join(', ');
  console.log(`${h.turn}: first audio at ${h.startMs.toFixed(1)} ms; ${h.gaps.length} gaps heard${gaps ? ': ' + gaps : ''}`);
}
process.exit(0);
