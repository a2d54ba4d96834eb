import { AppError, notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { ApiKeyEvent } from './api-key.events.ts';

export type ApiKeyCommand =
  | ({ type: 'CreateApiKey'; at: string } & Omit<
      Extract<ApiKeyEvent, { type: 'ApiKeyCreated' }>['data'],
      'createdAt'
    >)
  /** `orgId` and `mode` of the caller: another organization's key, or the other mode's, is not found. */
  | { type: 'DeleteApiKey'; keyId: string; orgId: string; mode: Mode; at: string };

export type ApiKeyState = { status: 'none' } | { status: 'active' | 'deleted'; orgId: string; mode: Mode };

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyEvent, ApiKeyState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'ApiKeyCreated':
        return { status: 'active', orgId: event.data.orgId, mode: event.data.mode };
      case 'ApiKeyDeleted':
        return state.status === 'none' ? state : { ...state, status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateApiKey': {
        if (state.status !== 'none')
          throw new AppError('conflict', `API key ${command.keyId} already exists`);
        if (command.domainId && command.permission !== 'sending_access') {
          throw new AppError(
            'validation_error',
            '`domain_id`: only a sending_access key can be restricted to a domain',
          );
        }
        const { type: _, at, ...data } = command;
        return [{ type: 'ApiKeyCreated', data: { ...data, createdAt: at } }];
      }
      case 'DeleteApiKey': {
        if (state.status !== 'active' || state.orgId !== command.orgId || state.mode !== command.mode) {
          throw notFound('API key', command.keyId);
        }
        return [{ type: 'ApiKeyDeleted', data: { keyId: command.keyId, deletedAt: command.at } }];
      }
    }
  },
};
