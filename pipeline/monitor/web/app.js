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
      if (m.type === 'snapshot') { last = m; render(m); } else { logEvent(m); }
    };
  }

  function setStatus(state, text) { const s = $('status'); s.dataset.state = state; s.textContent = text; }

  function select(id) {
    selected = id;
    const q = new URLSearchParams(location.search);
    q.set('session', id);
    history.replaceState(null, '', '?' + q.toString());
    if (ws && ws.readyState === 1) ws.send(JSON.stringify({ select: id }));
    if (last) render(last);
  }

  const fmt = (v) => (v === null || v === undefined) ? '–' : v.toFixed(1);

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }

  function render(m) {
    const rows = m.sessions || [];
    if (!selected && rows.length) select(rows[0].session);
    let dry = 0, low = 0, inter = 0, glitch = 0;
    const body = document.createElement('tbody');
    for (const r of rows) {
      if (r.state === 'underrun') dry++;
      if (r.state === 'low') low++;
      inter += r.interruptions; glitch += r.glitches;
      const tr = document.createElement('tr');
      tr.dataset.session = r.session;
      tr.dataset.state = r.state;
      if (r.session === selected) tr.className = 'sel';
      cell(tr, r.session); cell(tr, r.state, 'state'); cell(tr, r.turn || '');
      cell(tr, r.buffered_ms.toFixed(0), 'num'); cell(tr, fmt(r.ttft_ms), 'num'); cell(tr, fmt(r.tpot_ms), 'num');
      cell(tr, fmt(r.ttfa_ms), 'num'); cell(tr, String(r.turns), 'num'); cell(tr, String(r.interruptions), 'num');
      cell(tr, String(r.glitches), 'num'); cell(tr, String(r.barge_ins), 'num'); cell(tr, String(r.stall_warnings), 'num');
      tr.onclick = () => select(r.session);
      body.appendChild(tr);
    }
    $('sessions').replaceChild(body, $('sessions').tBodies[0]);
    $('n-sessions').textContent = m.sessions_total;
    $('n-underrun').textContent = dry; $('n-low').textContent = low;
    $('n-interruptions').textContent = inter; $('n-glitches').textContent = glitch;
    const more = $('more');
    more.hidden = m.sessions_total <= rows.length;
    more.textContent = (m.sessions_total - rows.length) + ' more sessions not listed (the table shows those closest to going silent)';
    $('selected').textContent = selected || '(click a row)';
    draw(m.selected === selected ? m.chart : null, m.now_ms, m.interruption_ms);
  }

  function draw(c, now, interruptionMs) {
    const cv = $('chart'), g = cv.getContext('2d');
    const W = cv.width, H = cv.height, L = 48, R = 8, T = 14, B = 34;
    g.clearRect(0, 0, W, H);
    const t0 = now - windowMs;
    const x = (t) => L + (t - t0) / windowMs * (W - L - R);
    const gaps = $('gaps');
    gaps.textContent = '';
    if (!c) { $('chart-summary').textContent = 'no data for this session yet'; return; }
    for (const k of ['samples', 'tokens', 'gaps', 'stalls']) c[k] = c[k] || [];
    let top = 1000;
    for (const s of c.samples) if (s[0] >= t0) top = Math.max(top, s[1]);
    top = Math.ceil(top / 1000) * 1000;
    const y = (ms) => T + (1 - ms / top) * (H - T - B);
    // grid and axes
    g.strokeStyle = '#26303a'; g.fillStyle = '#8a949e'; g.font = '11px sans-serif'; g.lineWidth = 1;
    for (let v = 0; v <= top; v += top / 4) {
      g.beginPath(); g.moveTo(L, y(v)); g.lineTo(W - R, y(v)); g.stroke();
      g.fillText((v / 1000).toFixed(2) + ' s', 4, y(v) + 4);
    }
    for (let s = 0; s <= windowMs; s += 5000) g.fillText('-' + ((windowMs - s) / 1000) + ' s', x(t0 + s) - 12, H - 4);
    // token gaps at least the interruption threshold, on the token lane
    const lane = H - B + 4;
    g.fillStyle = '#3a3f47';
    for (let i = 1; i < c.tokens.length; i++) {
      const a = c.tokens[i - 1], b = c.tokens[i];
      if (b - a >= interruptionMs && b >= t0) g.fillRect(x(Math.max(a, t0)), lane, x(b) - x(Math.max(a, t0)), 10);
    }
    // underruns
    let open = 0;
    for (const gp of c.gaps) {
      const end = gp[1] || now;
      if (!gp[1]) open++;
      const li = document.createElement('li');
      li.dataset.class = gp[1] ? (gp[2] ? 'interruption' : 'glitch') : 'dry';
      li.textContent = (gp[1] ? (gp[2] ? 'interruption ' : 'glitch ') + (gp[1] - gp[0]).toFixed(0) + ' ms' : 'player dry for ' + (now - gp[0]).toFixed(0) + ' ms') +
        ' at ' + new Date(gp[0]).toISOString().substring(11, 23);
      gaps.appendChild(li);
      if (end < t0) continue;
      g.fillStyle = gp[2] ? 'rgba(248,81,73,0.55)' : 'rgba(248,81,73,0.3)';
      g.fillRect(x(Math.max(gp[0], t0)), T, Math.max(2, x(end) - x(Math.max(gp[0], t0))), H - T - B);
    }
    // buffered audio: each sample, then the audio plays down until the next
    g.strokeStyle = '#58a6ff'; g.lineWidth = 2; g.beginPath();
    let first = true;
    for (let i = 0; i < c.samples.length; i++) {
      const [t, b] = c.samples[i];
      if (first) { g.moveTo(x(Math.max(t, t0)), y(b)); first = false; } else g.lineTo(x(t), y(b));
      const next = i + 1 < c.samples.length ? c.samples[i + 1][0] : now;
      const dry = t + b;
      if (dry < next) { g.lineTo(x(dry), y(0)); g.lineTo(x(next), y(0)); } else g.lineTo(x(next), y(b - (next - t)));
    }
    g.stroke();
    // token arrivals and stall warnings
    g.strokeStyle = '#e6e9ec'; g.lineWidth = 1;
    let shown = 0;
    for (const t of c.tokens) {
      if (t < t0) continue;
      shown++;
      g.beginPath(); g.moveTo(x(t), lane); g.lineTo(x(t), lane + 10); g.stroke();
    }
    g.fillStyle = '#d29922';
    for (const t of c.stalls) {
      if (t < t0) continue;
      g.beginPath(); g.moveTo(x(t) - 5, T); g.lineTo(x(t) + 5, T); g.lineTo(x(t), T + 8); g.fill();
    }
    const sum = $('chart-summary');
    sum.dataset.tokens = c.tokens.length;
    sum.dataset.gaps = c.gaps.length;
    sum.dataset.dry = open;
    sum.textContent = c.tokens.length + ' token arrivals (' + shown + ' in view), ' + c.gaps.length + ' underruns' + (open ? ', player dry now' : '');
  }

  function logEvent(m) {
    const li = document.createElement('li');
    li.dataset.kind = m.type;
    li.dataset.session = m.session;
    const at = new Date(m.unix_ns / 1e6).toISOString().substring(11, 23);
    let text = at + ' ' + m.session + (m.turn ? '/' + m.turn : '') + ' ' + m.type;
    if (m.type === 'underrun') text += ' ' + m.class + ' ' + m.duration_ms.toFixed(0) + ' ms (' + m.cause + ', ' + m.position + ')';
    if (m.type === 'underrun_started') text += ' at ' + m.at_ms.toFixed(0) + ' ms';
    if (m.type === 'stall_warning') text += ' tolerance ' + (m.tolerance_ms || 0).toFixed(0) + ' ms';
    if (m.type === 'turn') text += ' ' + m.status + ', ' + (m.interruptions || 0) + ' interruptions, ' + (m.glitches || 0) + ' glitches';
    li.textContent = text;
    const log = $('log');
    log.insertBefore(li, log.firstChild);
    while (log.children.length > 100) log.removeChild(log.lastChild);
  }

  // draw the state at once from one HTTP snapshot, then go live
  function first() {
    const q = new URLSearchParams();
    if (token) q.set('token', token);
    if (selected) q.set('session', selected);
    fetch('/api/snapshot?' + q.toString(), { cache: 'no-store' })
      .then((r) => r.ok ? r.json() : null)
      .then((m) => { if (m && !last) { last = m; render(m); } })
      .catch(() => {})
      .finally(connect);
  }

  first();
})();
