import type { LookUps } from '../platform/services.ts';
import { findAudience } from '../read-side/audiences/audiences.queries.ts';
import { findApiDomain } from '../read-side/domains/domains.queries.ts';
import { countedResourceIds } from '../read-side/plan-slots/plan-slots.queries.ts';
import { findTopic } from '../read-side/topics/topics.queries.ts';

/** The read-side query functions the write side is given (write-side/look-ups.ts declares what each must be). */
export const lookUps: LookUps = {
  findTopic,
  findAudience,
  findApiDomain,
  countedResourceIds,
};
