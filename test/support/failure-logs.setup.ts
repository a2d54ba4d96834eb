import { printLogsOfFailedTests } from './failure-logs.ts';

printLogsOfFailedTests();
