/** CPU seconds (user + system) the processes used so far, from /proc (USER_HZ 100); a process gone counts 0. */
import { readFileSync } from 'node:fs';

export function cpuSeconds(...pids: number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks
    } catch {
      // gone
    }
  }
  return total;
}
