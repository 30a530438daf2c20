// The live page of the underrun monitor: a websocket (/live) brings the
// sessions table and the selected session's chart every snapshot tick, and
// every event as it happens. No library, nothing fetched from elsewhere.
'use strict';
(function () {
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  let selected = params.get('session') || '';
  let ws = null;
  let last = null; // the latest snapshot
  const windowMs = 20000;
  const $ = (id) => document.getElementById(id);

  function url() {
    const q = new URLSearchParams();
    if (token) q.set('token', token);
    if (selected) q.set('session', selected);
    return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/live?' + q.toString();
  }

  function connect() {
    ws = new WebSocket(url());
    ws.onopen = () => { setStatus('open', 'live'); };
    ws.onclose = (e) => { setStatus('closed', 'disconnected (' + e.code + '), retrying'); setTimeout(connect, 1000); };
    ws.onmessage = (e) => {
      let m;
      try { m = JSON.parse(e.data); } catch (err) { return; }
      if (m.type === 'snapshot') { last = m; render(m); } else if (m.type === 'history') { if (m.session === selected) for (const e of m.events || []) logEvent(e); } else if (m.type !== 'hello') { logEvent(m); }
    };
  }

  function setStatus(state, text) { const s = $('status'); s.dataset.state = state; s.textContent = text; }

  function select(id) {
    if (id !== selected) { events.length = 0; seen.clear(); $('log').textContent = ''; }
    selected = id;
    const q = new URLSearchParams(location.search);
    q.set('session', id);
    history.replaceState(null, '', '?' + q.toString());
    if (ws && ws.readyState === 1) ws.send(JSON.stringify({ select: id }));
    if (last) render(last);
  }

  const fmt = (v) => (v === null || v === undefined) ? '–' : v.toFixed(1);
  const clock = (ms) => new Date(ms).toISOString().substring(11, 23);

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }

  function render(m) {
    const rows = m.sessions || [];
    if (!selected && rows.length) select(rows[0].session);
    const body = document.createElement('tbody');
    for (const r of rows) {
      const tr = document.createElement('tr');
      tr.dataset.session = r.session;
      tr.dataset.state = r.state;
      if (r.session === selected) tr.className = 'sel';
      cell(tr, r.session); cell(tr, r.state, 'state'); cell(tr, (r.turn || '') + (r.open_turns > 1 ? ' (of ' + r.open_turns + ' open)' : ''));
      cell(tr, r.buffered_ms.toFixed(0), 'num'); cell(tr, (r.ready_ms || 0).toFixed(0), 'num');
      cell(tr, fmt(r.ttft_ms), 'num'); cell(tr, fmt(r.tpot_ms), 'num');
      cell(tr, fmt(r.ttfa_ms), 'num'); cell(tr, String(r.turns), 'num'); cell(tr, String(r.interruptions), 'num');
      cell(tr, String(r.glitches), 'num'); cell(tr, String(r.barge_ins), 'num'); cell(tr, String(r.stall_warnings), 'num');
      tr.onclick = () => select(r.session);
      body.appendChild(tr);
    }
    $('sessions').replaceChild(body, $('sessions').tBodies[0]);
    // the sessions that closed last: their turns and gaps stay browsable
    const closed = m.closed || [];
    const cbody = document.createElement('tbody');
    for (const r of closed) {
      const tr = document.createElement('tr');
      tr.dataset.session = r.session;
      tr.dataset.state = 'closed';
      if (r.session === selected) tr.className = 'sel';
      cell(tr, r.session); cell(tr, clock(r.closed_unix_ms));
      cell(tr, String(r.turns), 'num'); cell(tr, String(r.interruptions), 'num'); cell(tr, String(r.glitches), 'num');
      cell(tr, (r.underrun_ms || 0).toFixed(0), 'num'); cell(tr, fmt(r.tpot_ms), 'num'); cell(tr, fmt(r.ttfa_ms), 'num');
      tr.onclick = () => select(r.session);
      cbody.appendChild(tr);
    }
    $('closed').replaceChild(cbody, $('closed').tBodies[0]);
    $('closed').hidden = $('closed-title').hidden = !closed.length;
    // the monitor's totals: closed sessions count too
    const t = m.totals || {};
    $('n-sessions').textContent = t.sessions || 0; $('n-closed').textContent = t.closed || 0;
    $('n-underrun').textContent = t.dry || 0; $('n-low').textContent = t.low || 0;
    $('n-interruptions').textContent = t.interruptions || 0; $('n-glitches').textContent = t.glitches || 0;
    const more = $('more');
    more.hidden = m.sessions_total <= rows.length;
    more.textContent = (m.sessions_total - rows.length) + ' more sessions not listed (the table shows those closest to going silent)';
    $('selected').textContent = selected || '(click a row)';
    draw(m.selected === selected ? m.chart : null, m.now_ms, m.interruption_ms);
  }

  // each turn has a player of its own: its audio not yet played in two
  // measures (buffered: released to the synthesizer; ready: made, waiting
  // at the player), its tokens, gaps and stall warnings
  function draw(c, now, interruptionMs) {
    // a session that has closed is drawn up to its close
    const closedAt = c && c.closed_ms;
    if (closedAt) now = closedAt;
    const cv = $('chart'), g = cv.getContext('2d');
    const W = cv.width, H = cv.height, L = 48, R = 8, T = 14, B = 34;
    g.clearRect(0, 0, W, H);
    const t0 = now - windowMs;
    const x = (t) => L + (t - t0) / windowMs * (W - L - R);
    const gaps = $('gaps');
    gaps.textContent = '';
    const turns = (c && c.turns) || [];
    if (!turns.length) { $('chart-summary').textContent = 'no data for this session yet'; return; }
    for (const ts of turns) for (const k of ['samples', 'tokens', 'gaps', 'stalls']) ts[k] = ts[k] || [];
    let top = 1000;
    for (const ts of turns) for (const s of ts.samples) if (s[0] >= t0) top = Math.max(top, s[1], s[2]);
    top = Math.ceil(top / 1000) * 1000;
    const y = (ms) => T + (1 - ms / top) * (H - T - B);
    // grid and axes
    g.strokeStyle = '#26303a'; g.fillStyle = '#8a949e'; g.font = '11px sans-serif'; g.lineWidth = 1;
    for (let v = 0; v <= top; v += top / 4) {
      g.beginPath(); g.moveTo(L, y(v)); g.lineTo(W - R, y(v)); g.stroke();
      g.fillText((v / 1000).toFixed(2) + ' s', 4, y(v) + 4);
    }
    for (let s = 0; s <= windowMs; s += 5000) g.fillText('-' + ((windowMs - s) / 1000) + ' s', x(t0 + s) - 12, H - 4);
    const lane = H - B + 4;
    let tokens = 0, shown = 0, ngaps = 0;
    const dry = [];
    for (const ts of turns) {
      tokens += ts.tokens.length; ngaps += ts.gaps.length;
      // token gaps at least the interruption threshold, on the token lane
      g.fillStyle = '#3a3f47';
      for (let i = 1; i < ts.tokens.length; i++) {
        const a = ts.tokens[i - 1], b = ts.tokens[i];
        if (b - a >= interruptionMs && b >= t0) g.fillRect(x(Math.max(a, t0)), lane, x(b) - x(Math.max(a, t0)), 10);
      }
      // this turn's underruns
      for (const gp of ts.gaps) {
        const end = gp[1] || now;
        if (!gp[1]) dry.push(ts.turn);
        const li = document.createElement('li');
        li.dataset.turn = ts.turn;
        li.dataset.class = gp[1] ? (gp[2] ? 'interruption' : 'glitch') : 'dry';
        li.textContent = 'turn ' + ts.turn + ': ' + (gp[1] ? (gp[2] ? 'interruption ' : 'glitch ') + (gp[1] - gp[0]).toFixed(0) + ' ms' : 'player dry for ' + (now - gp[0]).toFixed(0) + ' ms') +
          ' at ' + clock(gp[0]);
        gaps.appendChild(li);
        if (end < t0) continue;
        g.fillStyle = gp[2] ? 'rgba(248,81,73,0.55)' : 'rgba(248,81,73,0.3)';
        g.fillRect(x(Math.max(gp[0], t0)), T, Math.max(2, x(end) - x(Math.max(gp[0], t0))), H - T - B);
      }
      // the two measures, through the samples (the last is at the latest
      // snapshot while the turn is open)
      for (const [k, colour, dash] of [[1, '#58a6ff', []], [2, '#3fb950', [5, 3]]]) {
        g.strokeStyle = colour; g.lineWidth = 2; g.setLineDash(dash); g.beginPath();
        let first = true;
        for (const s of ts.samples) {
          if (first) { g.moveTo(x(Math.max(s[0], t0)), y(s[k])); first = false; } else g.lineTo(x(s[0]), y(s[k]));
        }
        g.stroke();
      }
      g.setLineDash([]);
      const lastSample = ts.samples[ts.samples.length - 1];
      if (turns.length > 1 && lastSample && lastSample[0] >= t0) {
        g.fillStyle = '#e6e9ec';
        g.fillText(ts.turn, Math.min(x(lastSample[0]) + 4, W - R - 30), y(lastSample[1]) - 4);
      }
      // token arrivals and stall warnings
      g.strokeStyle = '#e6e9ec'; g.lineWidth = 1;
      for (const t of ts.tokens) {
        if (t < t0) continue;
        shown++;
        g.beginPath(); g.moveTo(x(t), lane); g.lineTo(x(t), lane + 10); g.stroke();
      }
      g.fillStyle = '#d29922';
      for (const t of ts.stalls) {
        if (t < t0) continue;
        g.beginPath(); g.moveTo(x(t) - 5, T); g.lineTo(x(t) + 5, T); g.lineTo(x(t), T + 8); g.fill();
      }
    }
    const open = turns.filter((ts) => ts.open).length;
    const sum = $('chart-summary');
    sum.dataset.turns = turns.length;
    sum.dataset.open = open;
    sum.dataset.tokens = tokens;
    sum.dataset.gaps = ngaps;
    sum.dataset.dry = dry.length;
    sum.dataset.closed = closedAt ? 'true' : 'false';
    sum.textContent = (closedAt ? 'closed at ' + clock(closedAt) + ': ' : '') + turns.length + (turns.length === 1 ? ' turn' : ' turns') + ' (' + open + ' open), ' +
      tokens + ' token arrivals (' + shown + ' in view), ' + ngaps + ' underruns' +
      (dry.length ? ', player dry now in turn ' + dry.join(', ') : '');
  }

  // the events list: the session's history merged with live events by
  // seq, newest first
  const events = [], seen = new Set();
  function logEvent(m) {
    if (m.seq && seen.has(m.seq)) return;
    if (m.seq) seen.add(m.seq);
    let i = 0;
    while (i < events.length && (events[i].seq || 0) > (m.seq || 0)) i++;
    if (i >= 100) return;
    events.splice(i, 0, m);
    const li = eventItem(m);
    const log = $('log');
    log.insertBefore(li, log.children[i] || null);
    while (events.length > 100) { const old = events.pop(); seen.delete(old.seq); log.removeChild(log.lastChild); }
  }

  function eventItem(m) {
    const li = document.createElement('li');
    li.dataset.kind = m.type;
    li.dataset.session = m.session;
    li.dataset.seq = m.seq || 0;
    const at = new Date(m.unix_ns / 1e6).toISOString().substring(11, 23);
    let text = at + ' ' + m.session + (m.turn ? '/' + m.turn : '') + ' ' + m.type;
    if (m.type === 'underrun') text += ' ' + m.class + ' ' + m.duration_ms.toFixed(0) + ' ms (' + m.cause + ', ' + m.position + ', token ' + m.token + ' late)';
    if (m.type === 'underrun_started') text += ' at ' + m.at_ms.toFixed(0) + ' ms, after token ' + m.last_token + (m.cause === 'tool_call' ? ' (a tool call is running)' : '');
    if (m.type === 'tool_call') text += ' ' + (m.name || '') + ' at ' + m.at_ms.toFixed(0) + ' ms';
    if (m.type === 'tool_silence') text += ' ' + m.duration_ms.toFixed(0) + ' ms while a tool ran (no underrun)';
    if (m.type === 'stall_warning') text += ' tolerance ' + (m.tolerance_ms || 0).toFixed(0) + ' ms';
    if (m.type === 'turn') text += ' ' + m.status + ', ' + (m.interruptions || 0) + ' interruptions, ' + (m.glitches || 0) + ' glitches' +
      (m.tool_silences ? ', ' + m.tool_silences + ' tool-call silences (' + m.tool_silence_ms.toFixed(0) + ' ms)' : '');
    li.textContent = text;
    return li;
  }

  // draw the state at once from one HTTP snapshot, then go live
  function first() {
    const q = new URLSearchParams();
    if (token) q.set('token', token);
    if (selected) q.set('session', selected);
    fetch('/api/snapshot?' + q.toString(), { cache: 'no-store' })
      .then((r) => r.ok ? r.json() : null)
      .then((m) => {
        if (!m) return;
        if (m.selected === selected) for (const e of m.events || []) logEvent(e);
        if (!last) { last = m; render(m); }
      })
      .catch(() => {})
      .finally(connect);
  }

  first();
})();
