import type { z } from 'zod';
import { metaOf } from '../auth/auth-context.ts';
import { notFound } from '../errors.ts';
import type { EventMetadata, Position } from '../eventstore/types.ts';
import { newId } from '../ids.ts';
import type { Services } from '../services.ts';
import type { Tenant } from '../tenancy.ts';
import { Deleted, type RouteSchema } from './route-schema.ts';
import {
  type ApiRequest,
  type ApiRouter,
  created,
  createdEarlier,
  type Method,
  ok,
  waitAfterCommit,
} from './router.ts';

/** An id of the path that cannot be one of its kind (`pattern`) names nothing: it is simply not found. */
export function knownId(id: string, pattern: RegExp, name: string): string {
  if (!pattern.test(id)) throw notFound(name, id);
  return id;
}

/** What the command routes of one resource share. */
export interface CommandResource {
  /** Its group in the reference: `Topics`. */
  tag: string;
  /** What a 404 calls one: `Topic`. */
  name: string;
  /** The path parameter that holds its id (`topic_id`), and the shape of its ids, when they have a fixed one. */
  param: string;
  idPattern?: RegExp;
  /**
   * The id of the one a path names in another way than by its id (a contact by its address, as Resend's SDK
   * does), or null when none has that name; called for every path's name, it returns an id as it is.
   */
  named?: (tenant: Tenant, named: string) => Promise<string | null>;
  /** The projections that serve it: an answer waits for them (read-your-writes). */
  projections: string[];
  /** One as a GET shows it (null when there is none), and that answer's schema: what a create or a change answers. */
  read?: (tenant: Tenant, id: string) => Promise<unknown>;
  response?: z.ZodType;
  /**
   * Creation takes an Idempotency-Key: the new id (`<idPrefix>_…`) is chosen before the request runs, a retry
   * answers with what an earlier attempt created in `stream(id)`, and an answer whose wait fails is 503
   * `projection_timeout` carrying the id, so that the client knows the write was saved (docs/api.md).
   */
  idempotent?: { idPrefix: string; stream: (id: string) => string };
}

/** A command route's schema without its tag and answer, which are the resource's. */
type CommandSchema = Omit<RouteSchema, 'tag' | 'responses'>;

/** What a command reports: the position of what it wrote (none when it changed nothing). */
type Written = { position?: Position };

/**
 * The command routes of one resource. A create answers 201 and a change 200, each with the resource as its read
 * model shows it once the write is readable; a delete answers `{id, deleted: true}` once the read models have it.
 */
export function commandRoutes(api: ApiRouter, services: Services, resource: CommandResource) {
  const { tag, name, projections, idempotent } = resource;
  const schemaOf = (schema: CommandSchema, responses: RouteSchema['responses']) => ({
    ...schema,
    tag,
    responses,
  });

  /** The path's id of the resource. */
  const id = async (req: ApiRequest) => {
    const raw = req.params[resource.param];
    const named = resource.named ? await resource.named(req.auth, raw) : raw;
    if (named === null) throw notFound(name, raw);
    return resource.idPattern ? knownId(named, resource.idPattern, name) : named;
  };

  /** Its read and response schema, without which no route can answer with it: a gap fails at start-up. */
  const readable = () => {
    const { read, response } = resource;
    if (!read || !response) throw new Error(`${name} routes that answer with one need its read and response`);
    return { read, response };
  };

  /** The resource as a GET shows it, once the read models have reached `position`. */
  const answer = async (tenant: Tenant, resourceId: string, position: Position | undefined) => {
    const { read } = readable();
    if (idempotent) await waitAfterCommit(services, projections, position, { id: resourceId });
    else await services.readYourWrites.waitFor(projections, position);
    const found = await read(tenant, resourceId);
    if (!found) throw notFound(name, resourceId);
    return found;
  };

  return {
    id,
    answer,
    /** 201 with what `run` created (`id`). */
    create(path: string, schema: CommandSchema, run: (req: ApiRequest) => Promise<Written & { id: string }>) {
      api.post(
        path,
        async (req) => {
          const earlier = idempotent && (await createdEarlier(services, req, idempotent.stream));
          const made = earlier || (await run(req));
          return created(await answer(req.auth, made.id, made.position));
        },
        {
          schema: schemaOf(schema, { 201: readable().response }),
          ...(idempotent && {
            idempotent: { newIds: (_: unknown, at: number) => [newId(idempotent.idPrefix, at)] },
          }),
        },
      );
    },
    /** 200 with the resource of the path as `run` left it. */
    change(
      method: Method,
      path: string,
      schema: CommandSchema,
      run: (req: ApiRequest, id: string) => Promise<Written>,
    ) {
      api.add(
        method,
        path,
        async (req) => {
          const resourceId = await id(req);
          const { position } = await run(req, resourceId);
          return ok(await answer(req.auth, resourceId, position));
        },
        { schema: schemaOf(schema, { 200: readable().response }) },
      );
    },
    /** `DELETE`: `remove` the path's resource as the caller; 200 `{id, deleted: true}`. */
    delete(
      path: string,
      schema: CommandSchema,
      remove: (services: Services, meta: EventMetadata, id: string) => Promise<Written>,
    ) {
      api.delete(
        path,
        async (req) => {
          const resourceId = await id(req);
          const { position } = await remove(services, metaOf(req.auth), resourceId);
          await services.readYourWrites.waitFor(projections, position);
          return ok({ id: resourceId, deleted: true });
        },
        { schema: schemaOf(schema, { 200: Deleted }) },
      );
    },
  };
}
