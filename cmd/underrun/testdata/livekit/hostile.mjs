// hostile.mjs drives the LiveKit adapter's Monitor against a monitor that
// misbehaves, as an agent would (an LLM whose stream the adapter reports),
// and prints what the agent saw as one JSON line: the errors onError was
// given, the messages dropped, how long ready() and close() took, and how
// much the process grew (run it with --expose-gc to count only what is
// held). An exception thrown into the agent ends it with
// exit status 1. cmd/underrun/livekit_hostile_test.go runs it.
//
//   node --expose-gc hostile.mjs --monitor ws://HOST:PORT [--chunks N] [--turns N]
//     [--connect-timeout MS] [--close-timeout MS] [--gap-ms MS]
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Monitor } from '../../../../pipeline/monitor/livekit-agents-js/index.js';

const { values: args } = parseArgs({
  options: {
    monitor: { type: 'string' },
    chunks: { type: 'string', default: '20' },
    turns: { type: 'string', default: '1' },
    'connect-timeout': { type: 'string', default: '10000' },
    'close-timeout': { type: 'string', default: '2000' },
    'gap-ms': { type: 'string', default: '0' },
  },
});

// an LLM whose every stream is `chunks` one-word deltas, `gap-ms` apart
const chunks = Number(args.chunks);
const gap = Number(args['gap-ms']);
const llm = {
  chat() {
    let i = 0;
    return {
      async next() {
        if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
        if (i++ < chunks) return { done: false, value: { delta: { content: ` w${i % 10}` } } };
        return { done: true, value: undefined };
      },
      close() {},
    };
  },
};

const errors = [];
let t0 = performance.now();
const monitor = new Monitor(args.monitor, {
  session: 'hostile',
  connectTimeout: Number(args['connect-timeout']),
  closeTimeout: Number(args['close-timeout']),
  onError: (e) => errors.push(String(e?.message ?? e)),
});
monitor.wrapLLM(llm);
// what the process holds, garbage collected first (node --expose-gc)
const held = () => {
  globalThis.gc?.();
  return process.memoryUsage();
};
const open = await monitor.ready();
const readyMs = performance.now() - t0;
const base = held();
for (let n = 0; n < Number(args.turns); n++) {
  const stream = llm.chat({});
  for (;;) {
    const r = await stream.next();
    if (r.done) break;
  }
}
const grown = held();
t0 = performance.now();
await monitor.close();
const closeMs = performance.now() - t0;
console.log(JSON.stringify({
  open, readyMs, closeMs, errors, dropped: monitor.dropped ?? null,
  heapGrowthMB: (grown.heapUsed + grown.external + grown.arrayBuffers - base.heapUsed - base.external - base.arrayBuffers) / 2 ** 20,
}));
