/** Device types of the LPWAN suites: what a greenhouse unit senses in binary, and what a valve unit is told. */

/** Bytes 0–1 signed hundredths of a degree, byte 2 half percent of humidity. */
export const greenhouseSensorType = {
  assets: [
    { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
    { name: 'humidity', is: 'sensor', profile: { type: 'number' } },
  ],
  payload: {
    format: 'binary',
    conversion: {
      sense: [
        { asset: 'temperature', value: { byte: 0, bytelength: 2, signed: true, calculation: 'val / 100' } },
        { asset: 'humidity', value: { byte: 2, calculation: 'val / 2' } },
      ],
    },
  },
};

/** The valve and its reporting interval. */
export const valveActuators = [
  { name: 'valve', is: 'actuator', profile: { type: 'boolean' } },
  { name: 'interval', is: 'actuator', profile: { type: 'integer', minimum: 1, maximum: 1000 } },
];

/** A downlink: marker byte 165, the valve, the interval; `intervalDefault` when a command leaves it out. */
export function valveActuate(intervalDefault?: number) {
  return [
    { const: 165, field: { byte: 0 } },
    { asset: 'valve', field: { byte: 1, type: 'boolean' } },
    { asset: 'interval', field: { byte: 2, bytelength: 2, calculation: 'val / 60' }, ...(intervalDefault === undefined ? {} : { default: intervalDefault }) },
  ];
}
