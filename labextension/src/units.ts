/** Bytes as people read them: 1.5 GiB, 300 MiB; an unknown size says so in a word. */
export function formatBytes(size: number | null | undefined): string {
  if (size === null || size === undefined) {
    return 'unknown';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = size;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

/** How full a device is, for the meter's colour: 85% warns, 95% is danger. */
export function fillLevel(used: number | null, total: number | null): 'ok' | 'warn' | 'danger' {
  if (!used || !total) {
    return 'ok';
  }
  const share = used / total;
  return share >= 0.95 ? 'danger' : share >= 0.85 ? 'warn' : 'ok';
}
