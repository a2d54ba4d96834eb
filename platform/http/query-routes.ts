import type { z } from 'zod';
import { notFound } from '../errors.ts';
import { listQuery, type PageParams, parsePage } from './pagination.ts';
import type { RouteSchema } from './route-schema.ts';
import { type ApiRequest, type ApiRouter, ok } from './router.ts';

/** A read route's schema without its tag, which is the resource's. */
type ReadSchema = Omit<RouteSchema, 'tag'>;

/** The last `:name` of a path: the id of what a read route reads. */
const lastParam = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].at(-1)?.[1] ?? '';

/**
 * A read under a resource (its history, a list under it): nothing, so the resource's own 404, unless `found` says
 * the resource is the caller's; else what `read` gives.
 */
export const under =
  <A extends unknown[]>(
    found: (req: ApiRequest) => Promise<boolean>,
    read: (req: ApiRequest, ...rest: A) => Promise<unknown>,
  ) =>
  async (req: ApiRequest, ...rest: A) =>
    (await found(req)) ? read(req, ...rest) : null;

/**
 * The read routes of one resource, grouped under its `tag` in the reference. A route answers what its `read`
 * gives; nothing (null) is 404 `<name> <id> not found` for the path's last id, so a read of something under an
 * id that is not the caller's answers as the read of that id would.
 */
export function queryRoutes(api: ApiRouter, resource: { tag: string; name: string }) {
  const answer = (req: ApiRequest, path: string, found: unknown) => {
    if (found === null || found === undefined) throw notFound(resource.name, req.params[lastParam(path)]);
    return ok(found);
  };
  return {
    /** A page of a list: `query` is the route's `listQuery(filters)` (default: no filters), parsed first. */
    list<Q extends z.ZodObject>(
      path: string,
      schema: ReadSchema & { query?: Q },
      read: (req: ApiRequest, page: PageParams & z.output<Q>) => Promise<unknown>,
    ) {
      const query = schema.query ?? listQuery();
      api.get(
        path,
        async (req) =>
          answer(req, path, await read(req, parsePage(req.query, query) as PageParams & z.output<Q>)),
        { schema: { ...schema, tag: resource.tag, query } },
      );
    },
    /** One resource, or what is read at a path under it. */
    get(path: string, schema: ReadSchema, read: (req: ApiRequest) => Promise<unknown>) {
      api.get(path, async (req) => answer(req, path, await read(req)), {
        schema: { ...schema, tag: resource.tag },
      });
    },
  };
}
