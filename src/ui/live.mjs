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
  const status = document.getElementById('status');
  status.className = '';
  const whose = state.you.seesAll ? 'every key' : `key ${state.you.key}`;
  status.textContent = `${state.sessions.length} sessions, ${state.calls.length} recent calls of ${whose}; updated ${time(state.now)}`;
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
