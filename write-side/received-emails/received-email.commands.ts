import {
  type ReceivedEmailCommand,
  receivedEmailDecider,
} from '../../domain/received-emails/received-email.decider.ts';
import {
  headerListOfMap,
  type ReceivedContent,
  type ReceivedHeaders,
  receivedEmailStream,
} from '../../domain/received-emails/received-email.events.ts';
import type { BlobStore } from '../../platform/blob-store.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata, Position } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { receivedEmailIds } from './received-email-ids.ts';
import {
  type ArrivedMessage,
  type InboundTarget,
  readArrivedMessage,
  receivedEmailData,
} from './received-message.ts';

/**
 * Records a message that arrived for one or more organizations (docs/receiving.md). The raw message is in the
 * blob store already, staged; it is read from there (received-message.ts) while its checks finish and the ids of
 * its received emails are claimed (received-email-ids.ts), and then `InboundEmailReceived` is appended for each
 * organization (which share the blobs: their retention ends together), but one an earlier attempt of the same
 * message recorded already (`already`). The message's small blobs (raw, bodies, headers, attachments) are rows
 * committed with the first of those events: one commit for a message. A message that cannot be parsed is
 * recorded all the same, raw, with its `parseError`. Resolves once every event is committed: only then may the MX
 * answer 250.
 */
export async function receiveMessage(
  services: Pick<Services, 'store' | 'clock' | 'config' | 'blobs'>,
  message: ArrivedMessage,
  targets: InboundTarget[],
  actor: string,
): Promise<{ ids: string[]; already: string[]; position?: Position }> {
  const now = services.clock.now();
  const [read, checks, ids, raw] = await Promise.all([
    readArrivedMessage(services.blobs, message, now.getTime()),
    message.checks,
    receivedEmailIds(services, message, targets, actor, now),
    message.rows,
  ]);
  const already: string[] = [];
  let position: Position | undefined;
  // The message's rows go with the first record appended; the others name them once they are committed.
  let rows = [...raw, ...read.rows];
  for (const [i, target] of targets.entries()) {
    const data = receivedEmailData(
      read,
      message,
      checks,
      target,
      ids[i],
      services.clock.now(),
      services.config,
    );
    const meta: EventMetadata = { orgId: target.orgId, mode: target.mode, actor };
    // The stream is empty unless an earlier attempt recorded it: then the append finds it, reads it, and the
    // decider records nothing more.
    const result = await handleCommand(
      services.store,
      receivedEmailStream(data.receivedEmailId),
      receivedEmailDecider,
      { type: 'RecordReceivedEmail', email: data },
      meta,
      { history: [], blobs: rows },
    );
    if (result.events.length === 0) already.push(data.receivedEmailId);
    else {
      services.blobs.committed(rows);
      rows = [];
    }
    position = result.position ?? position;
  }
  return { ids, already, position };
}

/**
 * A message recorded with its headers in its content blob: they are copied into a blob of their own and
 * `ReceivedEmailHeadersKept` names it, so that they outlive the content. Nothing for a message whose headers are
 * kept apart already; a content blob that cannot be read (gone) leaves the headers unknown.
 */
async function keepHeadersApart(
  services: Pick<Services, 'store' | 'clock' | 'config' | 'blobs'>,
  meta: EventMetadata,
  receivedEmailId: string,
): Promise<void> {
  const stream = receivedEmailStream(receivedEmailId);
  const history = await services.store.readStream(stream);
  const state = rebuildState(receivedEmailDecider, history);
  if (!state.exists || state.purged || state.headersKey !== undefined || !state.contentKey) return;
  const blobs = services.blobs;
  const content = await readContent(blobs, state.contentKey);
  if (!content) return;
  const headers: ReceivedHeaders = { headers: headerListOfMap(content.headers ?? {}) };
  const headersKey = await blobs.put(Buffer.from(JSON.stringify(headers)), services.clock.now().getTime());
  await handleCommand(
    services.store,
    stream,
    receivedEmailDecider,
    { type: 'KeepReceivedEmailHeaders', receivedEmailId, headersKey },
    meta,
    { history },
  );
}

/** A content blob read back, or null when it is gone. */
async function readContent(blobs: BlobStore, key: string): Promise<ReceivedContent | null> {
  return blobs.get(key).then(
    (bytes) => JSON.parse(bytes.toString('utf8')) as ReceivedContent,
    () => null,
  );
}

/**
 * The blobs of a received email that no other record of its message, not yet purged, still names (they share the
 * message's files: docs/receiving.md). The read model finds the other records; the log says whether each is
 * purged (the read model may not show a purge appended a moment ago). Whichever is purged last deletes the files.
 */
async function blobsNamedByNoOther(
  services: Pick<Services, 'store' | 'db' | 'lookUps'>,
  receivedEmailId: string,
  state: { rawKey: string; receivedAt: string; blobKeys: string[] },
): Promise<string[]> {
  const others = await services.lookUps.receivedEmailsSharingRaw(
    services.db,
    state.rawKey,
    new Date(state.receivedAt),
  );
  const named = new Set<string>();
  for (const other of others.filter((o) => o.id !== receivedEmailId)) {
    const history = await services.store.readStream(receivedEmailStream(other.id));
    const theirs = rebuildState(receivedEmailDecider, history);
    if (theirs.exists && !theirs.purged) for (const key of theirs.blobKeys) named.add(key);
  }
  return state.blobKeys.filter((key) => !named.has(key));
}

/**
 * Ends a received email's retention: its headers are kept apart if they are not already (a message recorded
 * before they had a blob of their own), its blobs that no other unpurged record names are deleted, then
 * `ReceivedEmailPurged` is appended. In that order, so a crash in between leaves it due and the next run deletes
 * (nothing more) and records it.
 */
export async function purgeReceivedEmail(
  services: Pick<Services, 'store' | 'clock' | 'config' | 'db' | 'lookUps' | 'blobs'>,
  meta: EventMetadata,
  receivedEmailId: string,
): Promise<void> {
  const blobs = services.blobs;
  const state = rebuildState(
    receivedEmailDecider,
    await services.store.readStream(receivedEmailStream(receivedEmailId)),
  );
  if (state.exists && !state.purged && state.headersKey === undefined) {
    await keepHeadersApart(services, meta, receivedEmailId);
    // The records of the message for other organizations share its content blob, which this purge deletes:
    // each keeps its headers first.
    const others = await services.lookUps.receivedEmailsSharingRaw(
      services.db,
      state.rawKey,
      new Date(state.receivedAt),
    );
    for (const other of others.filter((o) => o.id !== receivedEmailId))
      await keepHeadersApart(
        services,
        { orgId: other.org_id, mode: other.mode, actor: meta.actor },
        other.id,
      );
  }
  await handleCommand(
    services.store,
    receivedEmailStream(receivedEmailId),
    receivedEmailDecider,
    async (state): Promise<ReceivedEmailCommand> => {
      if (state.exists && !state.purged) {
        const keys = await blobsNamedByNoOther(services, receivedEmailId, state);
        await Promise.all(keys.map((k) => blobs.delete(k)));
      }
      return { type: 'PurgeReceivedEmail', receivedEmailId, at: services.clock.now().toISOString() };
    },
    meta,
  );
}
