/**
 * Whether a rule's condition holds for a value (engine/rules/conditions.ts): thresholds strictly,
 * ranges, JSON equality whatever the key order, distances on the Earth for areas; a value of
 * another kind never satisfies a condition.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { distanceFrom, sameJson, valueTest } from '../../../engine/rules/conditions.ts';

test('thresholds and ranges: strict bounds; a string, null or an object never holds', () => {
  const above = valueTest({ above: 8 });
  assert.equal([7.9, 8, 8.01, -Infinity].map(above), [false, false, true, false]);
  assert.equal(['9', null, { v: 9 }, true, undefined].map(above), [false, false, false, false, false]);
  const below = valueTest({ below: -18 });
  assert.equal([-18, -18.5, 0].map(below), [false, true, false]);
  const outside = valueTest({ outside: [2, 8] });
  assert.equal([1.99, 2, 5, 8, 8.01].map(outside), [true, false, false, false, true]);
});

test('equals: JSON equality, key order ignored, types strict', () => {
  const open = valueTest({ equals: true });
  assert.equal([true, false, 'true', 1].map(open), [true, false, false, false]);
  const mode = valueTest({ equals: { mode: 'eco', levels: [1, 2] } });
  assert.ok(mode({ levels: [1, 2], mode: 'eco' }));
  assert.not.ok(mode({ levels: [2, 1], mode: 'eco' }));
  assert.not.ok(mode({ levels: [1, 2], mode: 'eco', extra: null }));
  assert.not.ok(mode([1, 2]));
  assert.ok(sameJson(null, null));
  assert.not.ok(sameJson(null, {}));
  assert.not.ok(sameJson({ a: undefined }, { b: undefined }));
});

test('outsideArea: haversine metres from the centre; not a location never holds', () => {
  const ghent = { latitude: 51.0543, longitude: 3.7174 };
  const brussels = { latitude: 50.8503, longitude: 4.3517 };
  const km = distanceFrom(ghent, brussels)! / 1000;
  assert.ok(km > 49 && km < 50, `${km} km`);
  assert.is(distanceFrom(ghent, ghent), 0);
  const left = valueTest({ outsideArea: { ...ghent, radiusMeters: 1000 } });
  assert.not.ok(left({ latitude: 51.0583, longitude: 3.7174 }), 'about 445 m north');
  assert.ok(left({ latitude: 51.0643, longitude: 3.7174 }), 'about 1.1 km north');
  assert.ok(left(brussels));
  for (const bad of [null, 'here', { latitude: '51', longitude: 3 }, { lat: 51, lon: 3 }, { latitude: NaN, longitude: 3 }]) assert.not.ok(left(bad));
  assert.not.ok(valueTest({ silentFor: 'PT1M' })(1), 'silence is not a value');
});

test.run();
