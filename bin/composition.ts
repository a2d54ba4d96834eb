import { Redis } from 'ioredis';
import type { Migration } from '../platform/db/migrations.ts';
import type { Projection } from '../projections/projection.ts';
import type { BackgroundProcess } from '../processes/process.ts';
import type { ApiRouter } from '../platform/http/router.ts';
import type { Services } from '../platform/services.ts';
import { MemoryRateLimiter, PostgresRateLimiter, RedisRateLimiter, type RateLimiter } from '../platform/http/rate-limit.ts';
import { apiKeysMigrations } from '../read-side/api-keys/schema.ts';
import { apiKeyQueryRoutes } from '../read-side/api-keys/routes.ts';
import { apiKeysProjection } from '../projections/api-keys.projection.ts';
import { apiKeyCommandRoutes } from '../write-side/api-keys/routes.ts';
import type { Config } from '../platform/config.ts';
import type { Database } from '../platform/db/database.ts';
import { AppError } from '../platform/errors.ts';

/**
 * The composition root's lists: every read-model migration, projection, route set and background process.
 * A new resource adds its lines here and nowhere else in bin/.
 */
export const migrations: Migration[] = [...apiKeysMigrations];

export const projections: Projection[] = [apiKeysProjection];

export function registerRoutes(api: ApiRouter, services: Services): void {
  apiKeyCommandRoutes(api, services, async (_auth, domainId) => {
    throw new AppError('validation_error', `\`domain_id\`: domain ${domainId} not found`);
  });
  apiKeyQueryRoutes(api, services);
}

export function backgroundProcesses(_services: Services): BackgroundProcess[] {
  return [];
}

export function createRateLimiter(config: Config, db: Database): RateLimiter {
  if (config.REDIS_URL) return new RedisRateLimiter(new Redis(config.REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 2 }));
  return config.embedded ? new MemoryRateLimiter() : new PostgresRateLimiter(db);
}
