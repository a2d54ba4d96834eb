/**
 * A real rebuild of one projection (projections/rebuild.ts: fresh tables in a schema of their own, filled from the
 * log, then swapped in) that the test holds before its swap: `replayed` resolves once the rebuild has read the log
 * to its end (an empty read), and it swaps its tables in only when `swap()` is called. Meanwhile the live tables
 * serve, and what is appended goes into them; the swap brings over what they took in.
 *
 *   const rebuild = holdRebuild(svc.postline, 'templates');
 *   await rebuild.replayed;          // the schema rebuild_templates is full, the live tables untouched
 *   ... writes, steps ...
 *   await rebuild.swap();            // swapped in; resolves with the rebuild's answer
 */
import type { Postline } from '../../bin/service.ts';
import type { EventStore } from '../../platform/eventstore/types.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';

export interface HeldRebuild {
  /** Resolves once the rebuild has read the whole log and waits to swap; rejects if the rebuild failed first. */
  replayed: Promise<void>;
  /** Lets the rebuild swap its tables in; resolves when it has. */
  swap(): Promise<{ events: number }>;
}

export function holdRebuild(postline: Postline, name: string): HeldRebuild {
  const { db, store, log } = postline.services;
  const projection = postline.runner.projections.find((p) => p.name === name);
  if (!projection) throw new Error(`no projection ${name}`);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reachedEnd!: () => void;
  const atEnd = new Promise<void>((resolve) => {
    reachedEnd = resolve;
  });
  // The store as the rebuild sees it: the read that finds the end of the log answers only once the test says so.
  const held = new Proxy(store, {
    get(target, key) {
      if (key === 'readAll')
        return async (options: Parameters<EventStore['readAll']>[0]) => {
          const events = await target.readAll(options);
          if (events.length === 0) {
            reachedEnd();
            await gate;
          }
          return events;
        };
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const done = rebuildProjection(db, held, projection, log);
  done.catch(() => {}); // answered by swap(), or by `replayed` when the rebuild fails before
  const failedFirst = done.then(() => {
    throw new Error(`the rebuild of ${name} swapped without being held`);
  });
  failedFirst.catch(() => {});
  return {
    replayed: Promise.race([atEnd, failedFirst]),
    swap: () => {
      release();
      return done;
    },
  };
}
