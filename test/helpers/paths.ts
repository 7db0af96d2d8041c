// Where the shared test models and their reference outputs live.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SHARED = process.env.KILN_SHARED ?? join(repoRoot, '..', 'shared');
export const MODELS = join(SHARED, 'models');
export const REFERENCE = join(MODELS, 'reference');
