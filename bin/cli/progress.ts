import type { Writable } from 'node:stream';

/** A one-line progress bar; redrawn in place on a terminal, printed every 10% otherwise. */
export function progressBar(out: Writable & { isTTY?: boolean }, label: string, unit = 'events') {
  let lastTenth = -1;
  return (done: number, total: number) => {
    const ratio = total === 0 ? 1 : Math.min(1, done / total);
    const width = 30;
    const filled = Math.round(ratio * width);
    const line = `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.floor(ratio * 100)}% ${done}/${total} ${unit}`;
    if (out.isTTY) out.write(`\r${line}${ratio === 1 ? '\n' : ''}`);
    else if (Math.floor(ratio * 10) !== lastTenth) {
      lastTenth = Math.floor(ratio * 10);
      out.write(`${line}\n`);
    }
  };
}
