/**
 * Whether a process with this pid is running on this host: the data-dir locks and the chDB store's
 * payload folders take over what a process that is gone left behind.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, but another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
