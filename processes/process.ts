/** A long-running worker (process manager, scheduler, verifier) started and stopped with the service. */
export interface BackgroundProcess {
  name: string;
  start(): void;
  stop(): Promise<void>;
}
