// Ticks of the history chart's time axis: whole seconds at least (a window is integer
// milliseconds, and a label like "10:04:05.250" tells a person nothing), on round local times,
// few enough to be read at the chart's width.
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
export const STEPS = [
  SECOND, 2 * SECOND, 5 * SECOND, 10 * SECOND, 15 * SECOND, 30 * SECOND,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
  DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY,
];

/** The smallest step that puts at most `maxTicks` ticks in [fromMs, toMs]. */
export function tickStep(fromMs, toMs, maxTicks) {
  const span = Math.max(0, toMs - fromMs);
  return STEPS.find((step) => span / step <= Math.max(1, maxTicks)) ?? STEPS.at(-1);
}

/** Local-time offset of `ms` in milliseconds east of UTC (ticks fall on local hours and midnights). */
function localOffset(ms) {
  return -new Date(ms).getTimezoneOffset() * MINUTE;
}

/** Ticks in [fromMs, toMs], every `step` ms, on multiples of `step` in local time. */
export function timeTicks(fromMs, toMs, step) {
  const offset = localOffset(fromMs);
  const ticks = [];
  for (let t = Math.ceil((fromMs + offset) / step) * step - offset; t <= toMs && ticks.length < 1000; t += step) ticks.push(t);
  return ticks;
}

const pad = (n) => String(n).padStart(2, '0');

/** A tick's label: seconds only when the step needs them; the date on the first tick and each new day. */
export function tickLabels(ticks, step) {
  return ticks.map((t, i) => {
    const d = new Date(t);
    const date = `${d.getDate()}/${d.getMonth() + 1}`;
    if (step >= DAY) return date;
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}${step < MINUTE ? `:${pad(d.getSeconds())}` : ''}`;
    const newDay = i === 0 || new Date(ticks[i - 1]).toDateString() !== d.toDateString();
    return newDay ? `${time}\n${date}` : time;
  });
}
