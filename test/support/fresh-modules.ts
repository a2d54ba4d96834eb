import { vi } from 'vitest';

// Test files share their worker process (vitest.config.ts: isolate off), so the packages they import are loaded
// once a worker. Postline's own modules are loaded anew for each file: their state (the id clock, the metrics
// registry) is that of a fresh process, as it was when every file had a process of its own.
vi.resetModules();
