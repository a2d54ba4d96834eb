import { writesAhead } from '../platform/metrics.ts';

/** Requests this process has answered so far after writing their rows ahead of the `emails` read model. */
export async function emailsWrittenAhead(): Promise<number> {
  const { values } = await writesAhead.get();
  return values.find((v) => v.labels.projection === 'emails')?.value ?? 0;
}
