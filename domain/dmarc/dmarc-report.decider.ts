import type { Decider } from '../../platform/eventstore/command.ts';
import { type DmarcReportEvent, dmarcReportKey } from './dmarc-report.events.ts';

export type DmarcReportCommand = { type: 'RecordDmarcReport'; report: DmarcReportEvent['data'] };

/** The reports already recorded for the domain, by `dmarcReportKey`. */
export type DmarcReportState = { keys: ReadonlySet<string> };

/** A domain's DMARC reports: each recorded once, however often its reporter sends it. */
export const dmarcReportDecider: Decider<DmarcReportCommand, DmarcReportEvent, DmarcReportState> = {
  initialState: { keys: new Set() },
  evolve(state, event) {
    return { keys: new Set([...state.keys, dmarcReportKey(event.data.report)]) };
  },
  decide(command, state) {
    if (state.keys.has(dmarcReportKey(command.report.report))) return [];
    return [{ type: 'DmarcReportReceived', data: command.report }];
  },
};
