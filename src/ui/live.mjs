// The live view's page: polls /ui/state with the API key typed into the form (kept in this page's
// memory only, never in the URL or storage) and shows the sessions and calls the key may see.
// Everything shown is set as text, never as markup.

const POLL_MS = 1000;
let key = '';
let timer;

function cell(row, text, className) {
  const td = document.createElement('td');
  td.textContent = text === undefined || text === null ? '' : String(text);
  if (className) td.className = className;
  row.appendChild(td);
}

function stopText(stop) {
  if (!stop) return '';
  return `${stop.function ? `${stop.function} at ` : ''}${stop.file}:${stop.line}`;
}

function time(iso) {
  return iso ? new Date(iso).toLocaleTimeString() : '';
}

function render(state) {
  const sessions = document.querySelector('#sessions tbody');
  sessions.replaceChildren();
  for (const s of state.sessions) {
    const row = document.createElement('tr');
    row.dataset.session = s.id;
    cell(row, s.toolset);
    cell(row, s.id);
    cell(row, s.key);
    cell(row, stopText(s.stop), 'stop');
    cell(row, s.last ? `${s.last.tool} (${s.last.ok ? 'ok' : 'failed'}, ${s.last.ms} ms)` : '');
    cell(row, time(s.lastUsed));
    sessions.appendChild(row);
    if (s.source) {
      const sourceRow = document.createElement('tr');
      sourceRow.className = 'source';
      sourceRow.dataset.sourceOf = s.id;
      const td = document.createElement('td');
      td.colSpan = 6;
      const pre = document.createElement('pre');
      s.source.lines.forEach((line, i) => {
        const number = s.source.first + i;
        const span = document.createElement('span');
        if (s.stop && number === s.stop.line) span.className = 'current';
        span.textContent = `${String(number).padStart(5)}  ${line}\n`;
        pre.appendChild(span);
      });
      td.appendChild(pre);
      if (s.trail && s.trail.length > 1) {
        const trail = document.createElement('p');
        trail.className = 'trail';
        trail.textContent = `Stops: ${s.trail.map((t) => `${t.function ? `${t.function}:` : ''}${t.line}`).join(' → ')}`;
        td.appendChild(trail);
      }
      sourceRow.appendChild(td);
      sessions.appendChild(sourceRow);
    }
  }
  const calls = document.querySelector('#calls tbody');
  calls.replaceChildren();
  for (const c of state.calls) {
    const row = document.createElement('tr');
    if (!c.ok) row.className = 'failed';
    cell(row, time(c.at));
    cell(row, c.key);
    cell(row, c.tool);
    cell(row, c.session);
    cell(row, c.ok ? `ok, ${c.ms} ms` : `failed, ${c.ms} ms`, 'outcome');
    cell(row, stopText(c.stop), 'stop');
    cell(row, c.answer, 'answer');
    calls.appendChild(row);
  }
  renderControl(state.control);
  const status = document.getElementById('status');
  status.className = '';
  const whose = state.you.seesAll ? 'every key' : `key ${state.you.key}`;
  status.textContent = `${state.sessions.length} sessions, ${state.calls.length} recent calls of ${whose}; updated ${time(state.now)}`;
}

function limitText(limit) {
  return limit ? `${limit.used} of ${limit.limit} per ${limit.period}` : 'none';
}

function renderControl(control) {
  document.getElementById('control').hidden = !control;
  if (!control) return;
  const keys = document.querySelector('#keys tbody');
  keys.replaceChildren();
  for (const k of control.keys) {
    const row = document.createElement('tr');
    cell(row, k.key_id);
    cell(row, k.key_name);
    cell(row, limitText(k.rate));
    cell(row, limitText(k.quota));
    keys.appendChild(row);
  }
  document.getElementById('audit').hidden = !control.audit;
  if (!control.audit) return;
  const v = control.audit.verification;
  const verification = document.getElementById('verification');
  verification.className = v.ok ? 'ok' : 'error';
  verification.textContent = v.ok
    ? `The chain verifies: ${v.head_seq} entries, head ${String(v.head || '').slice(0, 16)}`
    : `The chain is BROKEN at entry ${v.first_broken ? v.first_broken.seq : '?'}: ${v.first_broken ? v.first_broken.reason : ''}`;
  const tail = document.querySelector('#audit-tail tbody');
  tail.replaceChildren();
  for (const e of control.audit.entries) {
    const row = document.createElement('tr');
    cell(row, e.seq);
    cell(row, time(e.ts));
    cell(row, e.key_id);
    cell(row, e.event);
    cell(row, e.tool);
    cell(row, e.outcome || e.error || '');
    tail.appendChild(row);
  }
}

async function poll() {
  try {
    const res = await fetch('/ui/state', { headers: { Authorization: `Bearer ${key}` }, cache: 'no-store' });
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      const message = (body.error && body.error.message) || res.statusText;
      throw new Error(`HTTP ${res.status}: ${message}`);
    }
    render(await res.json());
  } catch (err) {
    const status = document.getElementById('status');
    status.className = 'error';
    status.textContent = err instanceof Error ? err.message : String(err);
  }
  timer = setTimeout(poll, POLL_MS);
}

document.getElementById('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  key = document.getElementById('key').value.trim();
  clearTimeout(timer);
  void poll();
});
