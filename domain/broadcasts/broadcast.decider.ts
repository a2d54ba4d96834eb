import { AppError, visibleTo } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { CommandCaller, Plan } from '../../platform/tenancy.ts';
import type {
  BroadcastContent,
  BroadcastEvent,
  BroadcastStatus,
  EmailIdScheme,
  SkippedRecipients,
} from './broadcast.events.ts';

type Caller = CommandCaller<'broadcastId'>;

export type BroadcastCommand =
  | (Caller & { type: 'CreateBroadcast'; content: BroadcastContent })
  | (Caller & { type: 'UpdateBroadcast'; content: BroadcastContent })
  | (Caller & { type: 'DeleteBroadcast' })
  | (Caller & { type: 'SendBroadcast'; plan: Plan; sendAt?: string })
  | (Caller & { type: 'CancelBroadcast' })
  /** The expansion process: a scheduled broadcast that fell due starts sending. */
  | (Caller & { type: 'StartSending' })
  /** The expansion process: a batch from `after` to `cursor` is queued; `last`: the audience has no more. */
  | (Caller & {
      type: 'RecordBatch';
      after: string;
      cursor: string;
      queued: number;
      skipped: SkippedRecipients;
      last: boolean;
    });

export type BroadcastState =
  | { exists: false }
  | {
      exists: true;
      orgId: string;
      mode: Mode;
      content: BroadcastContent;
      status: BroadcastStatus;
      deleted: boolean;
      sendAt: string | null;
      plan: Plan | null;
      startedAt: string | null;
      /** How its emails' ids are made, once it started sending. */
      emailIds: EmailIdScheme | null;
      /** The last contact id expanded ('' before the first batch). */
      cursor: string;
    };

/** A broadcast starts sending; its emails get their ids as those of every broadcast starting now. */
const sendingStarted = (broadcastId: string, plan: Plan, at: string): BroadcastEvent => ({
  type: 'BroadcastSendingStarted',
  data: { broadcastId, plan, startedAt: at, emailIds: 'contact-ordered' },
});

const owned = (state: BroadcastState, c: Caller) => visibleTo(state, c, 'Broadcast', c.broadcastId);

function draft(state: BroadcastState, c: Caller, doing: string) {
  const broadcast = owned(state, c);
  if (broadcast.status !== 'draft')
    throw new AppError(
      'broadcast_not_draft',
      `Broadcast ${c.broadcastId} is ${broadcast.status}; only a draft can be ${doing}.`,
    );
  return broadcast;
}

export const broadcastDecider: Decider<BroadcastCommand, BroadcastEvent, BroadcastState> = {
  initialState: { exists: false },
  evolve(state, event) {
    if (event.type === 'BroadcastCreated') {
      const { broadcastId: _, orgId, mode, createdAt: __, ...content } = event.data;
      return {
        exists: true,
        orgId,
        mode,
        content,
        status: 'draft',
        deleted: false,
        sendAt: null,
        plan: null,
        startedAt: null,
        emailIds: null,
        cursor: '',
      };
    }
    if (!state.exists) return state;
    switch (event.type) {
      case 'BroadcastUpdated': {
        const { broadcastId: _, updatedAt: __, ...content } = event.data;
        return { ...state, content };
      }
      case 'BroadcastDeleted':
        return { ...state, deleted: true };
      case 'BroadcastScheduled':
        return { ...state, status: 'scheduled', sendAt: event.data.sendAt, plan: event.data.plan };
      case 'BroadcastUnscheduled':
        return { ...state, status: 'draft', sendAt: null, plan: null };
      case 'BroadcastCanceled':
        return { ...state, status: 'canceled' };
      case 'BroadcastSendingStarted': {
        const { plan, startedAt, emailIds = 'hashed' } = event.data;
        return { ...state, status: 'sending', plan, startedAt, emailIds };
      }
      case 'BroadcastBatchExpanded':
        return { ...state, cursor: event.data.cursor };
      case 'BroadcastSent':
        return { ...state, status: 'sent' };
    }
  },
  decide(command, state) {
    const { broadcastId, at } = command;
    switch (command.type) {
      case 'CreateBroadcast': {
        if (state.exists) return [];
        const { orgId, mode, content } = command;
        return [{ type: 'BroadcastCreated', data: { broadcastId, orgId, mode, ...content, createdAt: at } }];
      }
      case 'UpdateBroadcast': {
        const broadcast = draft(state, command, 'changed');
        if (JSON.stringify(broadcast.content) === JSON.stringify(command.content)) return [];
        return [{ type: 'BroadcastUpdated', data: { broadcastId, ...command.content, updatedAt: at } }];
      }
      case 'DeleteBroadcast':
        draft(state, command, 'deleted');
        return [{ type: 'BroadcastDeleted', data: { broadcastId, deletedAt: at } }];
      case 'SendBroadcast': {
        draft(state, command, 'sent');
        const { plan, sendAt } = command;
        return sendAt
          ? [{ type: 'BroadcastScheduled', data: { broadcastId, sendAt, plan, scheduledAt: at } }]
          : [sendingStarted(broadcastId, plan, at)];
      }
      case 'CancelBroadcast': {
        // Scheduled: a draft again. Sending: stopped where its expansion is (its queued emails are canceled).
        const broadcast = owned(state, command);
        if (broadcast.status === 'sending')
          return [{ type: 'BroadcastCanceled', data: { broadcastId, canceledAt: at } }];
        if (broadcast.status !== 'scheduled')
          throw new AppError(
            'broadcast_not_scheduled',
            `Broadcast ${broadcastId} is ${broadcast.status}; only a scheduled or sending broadcast can be canceled.`,
          );
        return [{ type: 'BroadcastUnscheduled', data: { broadcastId, unscheduledAt: at } }];
      }
      case 'StartSending': {
        const broadcast = owned(state, command);
        // Only a scheduled broadcast that is due; anything else (canceled meanwhile, started already) stays.
        if (broadcast.status !== 'scheduled' || !broadcast.sendAt || broadcast.sendAt > at) return [];
        return [sendingStarted(broadcastId, broadcast.plan!, at)];
      }
      case 'RecordBatch': {
        const broadcast = owned(state, command);
        // A batch recorded already (a run that resumed after a crash did it again): nothing new.
        if (broadcast.status !== 'sending' || broadcast.cursor !== command.after) return [];
        const { after, cursor, queued, skipped, last } = command;
        const events: BroadcastEvent[] = [];
        if (cursor !== after)
          events.push({
            type: 'BroadcastBatchExpanded',
            data: { broadcastId, after, cursor, queued, skipped, expandedAt: at },
          });
        if (last) events.push({ type: 'BroadcastSent', data: { broadcastId, sentAt: at } });
        return events;
      }
    }
  },
};
