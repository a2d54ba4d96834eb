import { SIMULATOR_DOMAIN } from '../../domain/emails/addresses.ts';

/** One simulated happening for one recipient, `afterMs` after the email was sent. */
export type SimulatedStep =
  | { afterMs: number; kind: 'delivered'; attempt?: number }
  | { afterMs: number; kind: 'bounced'; smtpCode: number; smtpResponse: string }
  | {
      afterMs: number;
      kind: 'delayed';
      attempt: number;
      retryAfterMs: number;
      smtpCode: number;
      smtpResponse: string;
    }
  | { afterMs: number; kind: 'complained' }
  | { afterMs: number; kind: 'opened' }
  | { afterMs: number; kind: 'clicked' };

export const SIMULATED_DELIVERY_MS = 1000;
export const SIMULATED_RETRY_MS = 5 * 60_000;
export const SIMULATED_COMPLAINT_MS = 60_000;
/** opened@ and clicked@: the recipient reads the email this long after its delivery (and clicks as it opens). */
export const SIMULATED_READ_MS = 5000;

/**
 * What the test-mode simulator makes happen to a recipient. At the simulator domain the local part (before an
 * optional `+label`) picks the outcome: delivered@, bounced@, complained@, delayed@, opened@ (delivered, then
 * opened), clicked@ (delivered, opened, then its first link clicked). Every other address is delivered. Nothing
 * here opens a socket.
 */
export function simulatedOutcome(recipient: string): SimulatedStep[] {
  const [local, domain] = recipient.toLowerCase().split('@');
  const kind = domain === SIMULATOR_DOMAIN ? local.split('+')[0] : 'delivered';
  switch (kind) {
    case 'bounced':
      return [
        {
          afterMs: SIMULATED_DELIVERY_MS,
          kind: 'bounced',
          smtpCode: 550,
          smtpResponse: `550 5.1.1 <${recipient}>: Recipient address rejected: User unknown (simulated)`,
        },
      ];
    case 'complained':
      return [
        { afterMs: SIMULATED_DELIVERY_MS, kind: 'delivered' },
        { afterMs: SIMULATED_DELIVERY_MS + SIMULATED_COMPLAINT_MS, kind: 'complained' },
      ];
    case 'delayed':
      return [
        {
          afterMs: SIMULATED_DELIVERY_MS,
          kind: 'delayed',
          attempt: 1,
          retryAfterMs: SIMULATED_RETRY_MS,
          smtpCode: 451,
          smtpResponse: '451 4.7.1 Greylisted, please try again later (simulated)',
        },
        { afterMs: SIMULATED_DELIVERY_MS + SIMULATED_RETRY_MS, kind: 'delivered', attempt: 2 },
      ];
    case 'opened':
      return [
        { afterMs: SIMULATED_DELIVERY_MS, kind: 'delivered' },
        { afterMs: SIMULATED_DELIVERY_MS + SIMULATED_READ_MS, kind: 'opened' },
      ];
    case 'clicked':
      return [
        { afterMs: SIMULATED_DELIVERY_MS, kind: 'delivered' },
        { afterMs: SIMULATED_DELIVERY_MS + SIMULATED_READ_MS, kind: 'opened' },
        { afterMs: SIMULATED_DELIVERY_MS + SIMULATED_READ_MS, kind: 'clicked' },
      ];
    default:
      return [{ afterMs: SIMULATED_DELIVERY_MS, kind: 'delivered' }];
  }
}
