/**
 * kubectl's way of writing an age ("5d", "3h12m", "45s"): a port of apimachinery's
 * duration.HumanDuration, so AGE columns read exactly as they would on a live cluster.
 */
export function humanDuration(ms: number): string {
  // Go converts with int(): truncation toward zero, not flooring.
  const seconds = Math.trunc(ms / 1000);
  // Up to 2s in the future is tolerated as clock skew, as upstream does.
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    const days = Math.trunc(hours / 24);
    return h === 0 ? `${days}d` : `${days}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.trunc(hours / 24);
    const years = Math.trunc(days / 365);
    const dy = days % 365;
    return dy === 0 ? `${years}y` : `${years}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** The AGE of a timestamp seen from `now` (the bundle's collection time); "<unknown>" if absent. */
export function since(timestamp: unknown, now: Date): string {
  if (typeof timestamp !== 'string' || timestamp === '') return '<unknown>';
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now.getTime() - t);
}
