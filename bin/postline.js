#!/usr/bin/env -S node --max-semi-space-size=16
// The `postline` command: `npm start`, `npx postline` and the container all run this file, so what it sets holds
// for each of them.
// - A semi-space of at most 16 MiB (Node 20's default; Node 24 grows the young generation to 128 MiB on a machine
//   with much memory) keeps `npm start` under 250 MiB resident once ready.
// - Node's compile cache keeps the modules compiled, their types stripped, from one start to the next: a start
//   that finds them there needs no TypeScript stripper (about 10 MiB in each thread) and starts sooner. Set in the
//   environment, it holds for the projections' thread too. This file is JavaScript so that nothing is stripped
//   before the cache is on; NODE_COMPILE_CACHE names another folder, NODE_DISABLE_COMPILE_CACHE=1 turns it off.
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'postline-compile-cache');
module.enableCompileCache(process.env.NODE_COMPILE_CACHE);
await import('./main.ts');
