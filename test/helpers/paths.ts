// Where tests find the repository, the shared photos and the model mirror.
import path from 'node:path';

export const repoRoot = path.resolve(__dirname, '../../..');
export const sharedDir = path.resolve(repoRoot, process.env.CATCOMFORT_SHARED_DIR ?? '../shared');
export const photosDir = path.join(sharedDir, 'fixtures/photos');

export function photo(name: string): string {
  return path.join(photosDir, name);
}
