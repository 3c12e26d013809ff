import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full garbage collection of this thread's heap. */
export function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
