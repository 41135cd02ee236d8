import { afterAll } from 'vitest';
import { removeTempDirs } from './temp-dirs.js';

// Registered before a file's own hooks, so it runs after them: its agents and services have stopped by then.
afterAll(removeTempDirs);
